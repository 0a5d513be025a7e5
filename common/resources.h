// Resource amounts ("CPU", "GPU", "memory" in bytes, custom names) as the
// proto ResourceSet, with the arithmetic the scheduler and the node table use.
#pragma once

#include <string>

#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd {

inline constexpr const char* kCpu = "CPU";
inline constexpr const char* kGpu = "GPU";
inline constexpr const char* kMemory = "memory";

double Amount(const ResourceSet& set, const std::string& name);
// a += b, and a -= b (clamped at zero: accounting never goes negative).
void AddTo(ResourceSet* a, const ResourceSet& b);
void SubtractFrom(ResourceSet* a, const ResourceSet& b);
// True when every amount asked for is available (missing names count as 0).
bool Fits(const ResourceSet& available, const ResourceSet& request);
// The same amount of every resource (missing names count as 0).
bool SameAmounts(const ResourceSet& a, const ResourceSet& b);
// The first resource that `available` lacks for `request`, as "GPU: 2 > 1".
std::string Shortfall(const ResourceSet& available, const ResourceSet& request);

// Parses the --resources flag: a JSON object of name -> non-negative number.
Result<ResourceSet> ParseResourcesJson(const std::string& json);

// "4 CPU, 2 GPU, 1.5 GiB memory, 1 trainium" in a stable order.
std::string FormatResources(const ResourceSet& set);
// One amount for people: memory as HumanBytes (common/text.h), others as numbers.
std::string FormatAmount(const std::string& name, double value);

}  // namespace clusterd
