// The GPUs of one node, shared as Ray shares them: each device holds 1.0; a
// request below 1 takes that fraction of one device (two 0.5 ranks share an
// index, both see it in CUDA_VISIBLE_DEVICES), a request of 1 or more takes
// that many whole devices. The node table allocates with it and the
// scheduler plans with the same arithmetic, so a plan always allocates.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <map>
#include <optional>
#include <vector>

namespace clusterd {

class GpuSlots {
 public:
  GpuSlots() = default;
  explicit GpuSlots(const std::vector<int>& indexes);
  // From free fractions by device index (the scheduler's copy of a node).
  static GpuSlots FromFree(const std::map<int, double>& free);

  // How many workers of `per_worker` GPUs each fit, at most `at_most`.
  int Fit(double per_worker, int at_most) const;
  // Takes `amount` GPUs: the device indexes it uses, or nullopt when it does
  // not fit. A fraction goes to the fullest device it fits on, keeping whole
  // devices free for whole requests.
  std::optional<std::vector<int>> Take(double amount);
  // Takes `amount` on exactly these devices (a rank adopted after a head
  // restart keeps the GPUs it runs on); false, taking nothing, if they lack room.
  bool TakeExact(double amount, const std::vector<int>& indexes);
  void Give(double amount, const std::vector<int>& indexes);

  // A device withheld (found bad) is offered to nobody: Take, Fit and
  // free() leave it out, while what runs on it still gives back (Give) and
  // a rank adopted there still takes its share (TakeExact). Offer puts it
  // back with what is free of it. Both are no-ops for devices not here.
  void Withhold(int index);
  void Offer(int index);
  // How much of the withheld devices is free (what free() leaves out).
  double WithheldFree() const;

  const std::map<int, double>& free() const { return free_; }
  bool empty() const { return free_.empty(); }

 private:
  // The device's free fraction, withheld or not; null when it is not here.
  double* Slot(int index);
  const double* Slot(int index) const { return const_cast<GpuSlots*>(this)->Slot(index); }

  std::map<int, double> free_;      // device index -> fraction free, 0..1
  std::map<int, double> withheld_;  // the same, for devices offered to nobody
};

}  // namespace clusterd
