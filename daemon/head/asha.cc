// Asha: a line-by-line reading of Ray's _Bracket.on_result (ray/tune/
// schedulers/async_hyperband.py), with rungs kept ascending here and walked
// from the top, as Ray walks its descending list.
#include "daemon/head/asha.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace clusterd {

double LinearQuantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

Asha::Asha(const AshaSpec& spec, bool mode_min)
    : max_t_(spec.max_t()), rf_(spec.reduction_factor()), sign_(mode_min ? -1 : 1) {
  // Ray: MAX_RUNGS = int(log(max_t / min_t) / log(rf) + 1). The epsilon keeps
  // log(9)/log(3) from landing just below 2 on some libm.
  const int count = static_cast<int>(std::log(max_t_ / spec.grace_period()) / std::log(rf_) + 1 + 1e-9);
  for (int k = 0; k < count; ++k) milestones_.push_back(spec.grace_period() * std::pow(rf_, k));
  recorded_.resize(milestones_.size());
}

std::optional<double> Asha::SignedCutoff(int rung) const {
  const auto& recorded = recorded_[static_cast<size_t>(rung)];
  std::vector<double> values;
  for (const auto& [trial, value] : recorded) {
    if (!std::isnan(value)) values.push_back(value);  // nanpercentile
  }
  if (values.empty()) return std::nullopt;
  return LinearQuantile(values, 1 - 1 / rf_);
}

std::optional<double> Asha::Cutoff(int rung) const {
  auto cutoff = SignedCutoff(rung);
  if (cutoff) *cutoff *= sign_;
  return cutoff;
}

Asha::Decision Asha::OnResult(int trial, double time, double value) {
  Decision decision;
  decision.value = value;
  if (time >= max_t_) {
    decision.action = Action::kDone;
    return decision;
  }
  const double reward = sign_ * value;
  for (int rung = static_cast<int>(milestones_.size()) - 1; rung >= 0; --rung) {
    auto& recorded = recorded_[static_cast<size_t>(rung)];
    const bool seen = recorded.count(trial) > 0;
    // Recorded here already: the decision at this rung was made; the lower
    // rungs were passed on the way.
    if (time >= milestones_[static_cast<size_t>(rung)] && seen) break;
    if (time < milestones_[static_cast<size_t>(rung)] || seen) continue;
    auto cutoff = SignedCutoff(rung);
    if (cutoff && reward < *cutoff) {
      decision.action = Action::kStop;
      decision.cutoff = sign_ * *cutoff;
    }
    if (!std::isnan(reward)) recorded[trial] = reward;
    decision.rung = rung;
    break;
  }
  return decision;
}

void Asha::Remove(int trial) {
  for (auto& recorded : recorded_) recorded.erase(trial);
}

std::string Asha::StopReason(const Decision& d) const {
  return fmt::format("early-stopped by ASHA at rung {} (value {:.6g} {} cutoff {:.6g})", d.rung, d.value,
                     sign_ > 0 ? "<" : ">", d.cutoff);
}

}  // namespace clusterd
