#include "daemon/head/gpu_slots.h"

#include <algorithm>
#include <cmath>

namespace clusterd {

namespace {
constexpr double kEpsilon = 1e-9;
bool Whole(double amount) { return amount >= 1 - kEpsilon; }
}  // namespace

GpuSlots::GpuSlots(const std::vector<int>& indexes) {
  for (int index : indexes) free_[index] = 1.0;
}

GpuSlots GpuSlots::FromFree(const std::map<int, double>& free) {
  GpuSlots slots;
  slots.free_ = free;
  return slots;
}

int GpuSlots::Fit(double per_worker, int at_most) const {
  if (per_worker <= kEpsilon) return at_most;
  int fit = 0;
  if (Whole(per_worker)) {
    int whole = 0;
    for (const auto& [index, free] : free_) whole += free >= 1 - kEpsilon ? 1 : 0;
    fit = static_cast<int>(whole / std::llround(per_worker));
  } else {
    for (const auto& [index, free] : free_) fit += static_cast<int>(std::floor(free / per_worker + kEpsilon));
  }
  return std::min(fit, at_most);
}

std::optional<std::vector<int>> GpuSlots::Take(double amount) {
  if (amount <= kEpsilon) return std::vector<int>{};
  std::vector<int> taken;
  if (Whole(amount)) {
    long count = std::lround(amount);
    for (auto& [index, free] : free_) {
      if (static_cast<long>(taken.size()) == count) break;
      if (free >= 1 - kEpsilon) taken.push_back(index);
    }
    if (static_cast<long>(taken.size()) < count) return std::nullopt;
    for (int index : taken) free_[index] = 0;
    return taken;
  }
  // Best fit: the device with the least room that still holds the fraction.
  int best = -1;
  for (const auto& [index, free] : free_) {
    if (free + kEpsilon >= amount && (best < 0 || free < free_[best])) best = index;
  }
  if (best < 0) return std::nullopt;
  free_[best] = std::max(0.0, free_[best] - amount);
  return std::vector<int>{best};
}

bool GpuSlots::TakeExact(double amount, const std::vector<int>& indexes) {
  if (amount <= kEpsilon) return indexes.empty();
  double each = Whole(amount) ? 1.0 : amount;
  if (Whole(amount) && static_cast<long>(indexes.size()) != std::lround(amount)) return false;
  if (!Whole(amount) && indexes.size() != 1) return false;
  for (int index : indexes) {
    const double* free = Slot(index);
    if (!free || *free + kEpsilon < each) return false;
  }
  for (int index : indexes) {
    double* free = Slot(index);
    *free = std::max(0.0, *free - each);
  }
  return true;
}

void GpuSlots::Give(double amount, const std::vector<int>& indexes) {
  double each = Whole(amount) ? 1.0 : amount;
  for (int index : indexes) {
    if (double* free = Slot(index)) *free = std::min(1.0, *free + each);
  }
}

void GpuSlots::Withhold(int index) {
  auto it = free_.find(index);
  if (it == free_.end()) return;
  withheld_[index] = it->second;
  free_.erase(it);
}

void GpuSlots::Offer(int index) {
  auto it = withheld_.find(index);
  if (it == withheld_.end()) return;
  free_[index] = it->second;
  withheld_.erase(it);
}

double GpuSlots::WithheldFree() const {
  double sum = 0;
  for (const auto& [index, free] : withheld_) sum += free;
  return sum;
}

double* GpuSlots::Slot(int index) {
  if (auto it = free_.find(index); it != free_.end()) return &it->second;
  if (auto it = withheld_.find(index); it != withheld_.end()) return &it->second;
  return nullptr;
}

}  // namespace clusterd
