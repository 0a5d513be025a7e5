#include "daemon/head/queue_policy/fair_share.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace clusterd {

bool operator<(const FairShareStanding& a, const FairShareStanding& b) {
  return std::tie(a.gpu_seconds, a.cpu_seconds, a.gpus_now, a.cpus_now) <
         std::tie(b.gpu_seconds, b.cpu_seconds, b.gpus_now, b.cpus_now);
}

void FairShare::BringUpToDate(Account& account, Micros now) const {
  FairShareStanding& s = account.standing;
  if (now <= account.at) return;
  if (half_life_ <= 0) {
    s.gpu_seconds = s.cpu_seconds = 0;
  } else {
    // Usage u decays as u' = -k u + rate, k = ln 2 / half-life: over dt it
    // becomes u d + rate (1 - d) / k, with d = 2^(-dt / half-life).
    const double dt = static_cast<double>(now - account.at);
    const double half_life = static_cast<double>(half_life_);
    const double kept = std::exp2(-dt / half_life);
    const double mean_life_s = half_life / 1e6 / std::log(2.0);
    s.gpu_seconds = s.gpu_seconds * kept + s.gpus_now * mean_life_s * (1 - kept);
    s.cpu_seconds = s.cpu_seconds * kept + s.cpus_now * mean_life_s * (1 - kept);
  }
  account.at = now;
}

void FairShare::Charge(const std::string& user, double gpus, double cpus, int sign) {
  const Micros now = clock_->NowMicros();
  auto [it, added] = accounts_.try_emplace(user);
  if (added) it->second.at = now;
  BringUpToDate(it->second, now);
  FairShareStanding& s = it->second.standing;
  s.gpus_now = std::max(0.0, s.gpus_now + sign * gpus);
  s.cpus_now = std::max(0.0, s.cpus_now + sign * cpus);
}

FairShareStanding FairShare::StandingOf(const std::string& user) const {
  auto it = accounts_.find(user);
  if (it == accounts_.end()) return {};
  BringUpToDate(it->second, clock_->NowMicros());
  return it->second.standing;
}

}  // namespace clusterd
