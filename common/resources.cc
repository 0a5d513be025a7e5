#include "common/resources.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "common/text.h"

namespace clusterd {

namespace {

// A protobuf map and a ResourceAmounts are both looked up by find().
template <typename Map>
double AmountIn(const Map& amounts, const std::string& name) {
  auto it = amounts.find(name);
  return it == amounts.end() ? 0.0 : it->second;
}

}  // namespace

double Amount(const ResourceSet& set, const std::string& name) { return AmountIn(set.amounts(), name); }

double Amount(const ResourceAmounts& amounts, const std::string& name) { return AmountIn(amounts, name); }

ResourceAmounts ToAmounts(const ResourceSet& set) {
  ResourceAmounts amounts;
  amounts.reserve(set.amounts().size());
  for (const auto& [name, value] : set.amounts()) amounts.emplace(name, value);
  return amounts;
}

void AddTo(ResourceSet* a, const ResourceSet& b) {
  for (const auto& [name, value] : b.amounts()) (*a->mutable_amounts())[name] += value;
}

void SubtractFrom(ResourceSet* a, const ResourceSet& b) {
  for (const auto& [name, value] : b.amounts()) {
    double& slot = (*a->mutable_amounts())[name];
    slot = std::max(0.0, slot - value);
  }
}

namespace {
// Fractional CPUs are summed in floating point; a request equal to what is
// left must fit even after rounding noise.
constexpr double kEpsilon = 1e-9;
}  // namespace

bool Fits(const ResourceSet& available, const ResourceSet& request) {
  return Shortfall(available, request).empty();
}

bool SameAmounts(const ResourceSet& a, const ResourceSet& b) { return Fits(a, b) && Fits(b, a); }

namespace {

template <typename Available>
std::string ShortfallOf(const Available& available, const ResourceSet& request) {
  for (const auto& [name, want] : request.amounts()) {
    if (want <= 0) continue;
    double have = Amount(available, name);
    if (want > have + kEpsilon) {
      return fmt::format("{}: {} > {}", name, FormatAmount(name, want), FormatAmount(name, have));
    }
  }
  return "";
}

}  // namespace

std::string Shortfall(const ResourceSet& available, const ResourceSet& request) {
  return ShortfallOf(available, request);
}

std::string Shortfall(const ResourceAmounts& available, const ResourceSet& request) {
  return ShortfallOf(available, request);
}

Result<ResourceSet> ParseResourcesJson(const std::string& json) {
  google::protobuf::Struct parsed;
  auto st = google::protobuf::util::JsonStringToMessage(json, &parsed);
  if (!st.ok()) {
    return Status::InvalidArgument(fmt::format(
        "--resources '{}' is not a JSON object of name: number ({})", json, st.message().as_string()));
  }
  ResourceSet out;
  for (const auto& [name, value] : parsed.fields()) {
    if (value.kind_case() != google::protobuf::Value::kNumberValue) {
      return Status::InvalidArgument(fmt::format("--resources: '{}' must be a number", name));
    }
    double amount = value.number_value();
    if (!std::isfinite(amount) || amount < 0) {
      return Status::InvalidArgument(
          fmt::format("--resources: '{}' must be a non-negative number, got {}", name, amount));
    }
    if (name == kCpu || name == kGpu || name == kMemory) {
      return Status::InvalidArgument(fmt::format(
          "--resources: '{}' is set by --num-cpus, --num-gpus or --memory, not --resources", name));
    }
    (*out.mutable_amounts())[name] = amount;
  }
  return out;
}

namespace {

// A memory amount as a whole count of bytes: nothing below 0, uint64's
// largest past its range (a double holds either).
uint64_t WholeBytes(double value) {
  if (!(value > 0)) return 0;
  if (value >= 18446744073709551615.0) return UINT64_MAX;
  return static_cast<uint64_t>(value + 0.5);
}

}  // namespace

std::string FormatAmount(const std::string& name, double value) {
  if (name == kMemory) return HumanBytes(WholeBytes(value));
  if (value == std::floor(value)) return fmt::format("{:.0f}", value);
  return fmt::format("{:g}", value);
}

std::string FormatResources(const ResourceSet& set) {
  // CPU, GPU, memory first, then custom names alphabetically.
  std::vector<std::string> names;
  for (const char* known : {kCpu, kGpu, kMemory}) {
    if (set.amounts().count(known)) names.push_back(known);
  }
  std::vector<std::string> custom;
  for (const auto& [name, value] : set.amounts()) {
    if (name != kCpu && name != kGpu && name != kMemory) custom.push_back(name);
  }
  std::sort(custom.begin(), custom.end());
  names.insert(names.end(), custom.begin(), custom.end());
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ", ";
    out += FormatAmount(name, Amount(set, name)) + " " + name;
  }
  return out;
}

}  // namespace clusterd
