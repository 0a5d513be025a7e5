#include "daemon/head/queue_policy/quotas.h"

#include <cmath>

#include <fmt/format.h>

#include "common/resources.h"

namespace clusterd {

namespace {
// Sums of doubles drift: a quota of 8 met by eight 1-GPU jobs must hold.
constexpr double kSlack = 1e-9;
}  // namespace

std::string ResourceWord(const std::string& resource) {
  if (resource == kGpu) return "GPUs";
  if (resource == kCpu) return "CPUs";
  return resource;
}

void Quotas::Set(const std::string& name, const ResourceSet& limit) {
  limits_[name] = limit;
  ++generation_;
}

bool Quotas::Remove(const std::string& name) {
  ++generation_;
  return limits_.erase(name) > 0;
}

const ResourceSet* Quotas::LimitOf(const std::string& name) const {
  auto it = limits_.find(name);
  return it == limits_.end() ? nullptr : &it->second;
}

std::vector<QuotaInfo> Quotas::List() const {
  std::map<std::string, QuotaInfo> by_name;
  for (const auto& [name, limit] : limits_) {
    QuotaInfo& info = by_name[name];
    info.set_name(name);
    *info.mutable_limit() = limit;
  }
  for (const auto& [name, held] : used_) {
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;  // only names with a quota are listed
    for (const auto& [resource, amount] : held) {
      if (amount > kSlack) (*it->second.mutable_used()->mutable_amounts())[resource] = amount;
    }
  }
  std::vector<QuotaInfo> out;
  for (auto& [name, info] : by_name) out.push_back(std::move(info));
  return out;
}

void Quotas::Charge(const std::vector<std::string>& holders, const ResourceSet& amounts, int sign) {
  for (const std::string& holder : holders) {
    auto& held = used_[holder];
    for (const auto& [resource, amount] : amounts.amounts()) {
      double& now = held[resource];
      now += sign * amount;
      if (now < kSlack) held.erase(resource);
    }
    if (held.empty()) used_.erase(holder);
  }
}

std::optional<std::string> Quotas::WouldPass(const std::vector<std::string>& holders,
                                            const ResourceSet& amounts) const {
  for (const std::string& holder : holders) {
    auto limit = limits_.find(holder);
    if (limit == limits_.end()) continue;
    auto held = used_.find(holder);
    for (const auto& [resource, cap] : limit->second.amounts()) {
      const double want = Amount(amounts, resource);
      if (want <= 0) continue;
      double now = 0;
      if (held != used_.end()) {
        auto it = held->second.find(resource);
        if (it != held->second.end()) now = it->second;
      }
      if (now + want <= cap + kSlack) continue;
      std::string reason = fmt::format("{} uses {:g} of {:g} {}", holder, now, cap, ResourceWord(resource));
      if (now + kSlack < cap) reason += fmt::format(" and the job asks {:g} more", want);
      return reason;
    }
  }
  return std::nullopt;
}

}  // namespace clusterd
