// The node agent's periodic look at its GPUs: every interval, on a thread
// of its own, it runs nvidia-smi (nvidia_smi_output.h says what it asks
// and what counts as a fault) as a child process with a timeout, so that
// a driver that hangs nvidia-smi never holds up the agent: such a run is
// killed and counts as failed. Heartbeats carry the latest reading
// (Latest); the head keeps a GPU found bad out of the offer until an
// operator resets it, so the probe itself keeps no memory of faults.
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "daemon/agent/nvidia_smi_output.h"

namespace clusterd {

// Runs `program args...` with stdout and stderr into one pipe, killing its
// process group after `timeout` or when `*stop` turns true. `*timed_out`
// says whether it was killed for the timeout.
NvidiaSmiRun RunWithTimeout(const std::string& program, const std::vector<std::string>& args, Micros timeout,
                            const std::atomic<bool>* stop, bool* timed_out);

class GpuProbe {
 public:
  struct Options {
    std::string nvidia_smi;   // "" = no probe
    Micros interval = 0;      // 0 = no probe
    Micros timeout = 5'000'000;
    // Whether a GPU nvidia-smi once listed and lists no more is bad. Off
    // when the node's GPUs were named by --num-gpus, not found by nvidia-smi.
    bool watch_missing = true;
    // The GPUs nvidia-smi listed when the agent started: one of them
    // missing from the first reading is bad too.
    std::vector<int> expected;
  };

  explicit GpuProbe(Options options);
  ~GpuProbe();  // stops the thread, killing a run under way
  GpuProbe(const GpuProbe&) = delete;
  GpuProbe& operator=(const GpuProbe&) = delete;

  // Starts probing now and every interval (no-op when off).
  void Start();
  // Probes once on the calling thread and keeps the reading (tests, and the thread).
  void ProbeNow();
  // The latest reading, by index; empty before the first or when off.
  std::vector<GpuStatus> Latest() const;
  // Adds the latest reading to a heartbeat's usage, its faults' words cut
  // as much as needed for the whole usage to stay within `max_bytes` (a
  // heartbeat datagram is small: common/net/heartbeat_datagram.h).
  void AddTo(NodeUsage* usage, size_t max_bytes) const;
  bool enabled() const { return !options_.nvidia_smi.empty() && options_.interval > 0; }

 private:
  NvidiaSmiRun Run(const std::vector<std::string>& args, bool* timed_out);
  void Loop();

  const Options options_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex wake_mutex_;
  std::condition_variable wake_;

  // Only the probing thread touches these.
  size_t field_set_ = 0;             // index into GpuQueryFieldSets(): the first the driver takes
  bool remapped_rows_ = true;        // the driver answers --query-remapped-rows
  std::map<std::string, int> bus_ids_;
  std::set<int> ever_listed_;
  std::map<int, std::string> logged_faults_;
  std::string logged_failure_;

  mutable std::mutex mutex_;
  std::vector<GpuStatus> latest_;
};

}  // namespace clusterd
