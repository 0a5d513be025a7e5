// Resource amounts ("CPU", "GPU", "memory" in bytes, custom names) as the
// proto ResourceSet, with the arithmetic the scheduler and the node table use.
#pragma once

#include <boost/container/flat_map.hpp>
#include <boost/container/small_vector.hpp>

#include <functional>
#include <string>
#include <utility>

#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd {

inline constexpr const char* kCpu = "CPU";
inline constexpr const char* kGpu = "GPU";
inline constexpr const char* kMemory = "memory";

double Amount(const ResourceSet& set, const std::string& name);

// The same amounts as plain values in one block: what the scheduler's
// rows of nodes hold, since a decision reads every row's amounts several
// times and a protobuf map is a hash table of its own (a cache miss or
// two a lookup). Up to four names (CPU, GPU, memory and one more) without
// an allocation.
using ResourceAmounts = boost::container::flat_map<std::string, double, std::less<>,
                                                   boost::container::small_vector<std::pair<std::string, double>, 4>>;
double Amount(const ResourceAmounts& amounts, const std::string& name);
ResourceAmounts ToAmounts(const ResourceSet& set);
// a += b, and a -= b (clamped at zero: accounting never goes negative).
void AddTo(ResourceSet* a, const ResourceSet& b);
void SubtractFrom(ResourceSet* a, const ResourceSet& b);
// True when every amount asked for is available (missing names count as 0).
bool Fits(const ResourceSet& available, const ResourceSet& request);
// The same amount of every resource (missing names count as 0).
bool SameAmounts(const ResourceSet& a, const ResourceSet& b);
// The first resource that `available` lacks for `request`, as "GPU: 2 > 1".
std::string Shortfall(const ResourceSet& available, const ResourceSet& request);
std::string Shortfall(const ResourceAmounts& available, const ResourceSet& request);

// Parses the --resources flag: a JSON object of name -> non-negative number.
Result<ResourceSet> ParseResourcesJson(const std::string& json);

// "4 CPU, 2 GPU, 1.5 GiB memory, 1 trainium" in a stable order.
std::string FormatResources(const ResourceSet& set);
// One amount for people: memory as HumanBytes (common/text.h), others as numbers.
std::string FormatAmount(const std::string& name, double value);

}  // namespace clusterd
