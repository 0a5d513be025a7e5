#include "daemon/head/job_shape.h"

#include <map>

#include <fmt/format.h>

namespace clusterd {

GangRequest GangOf(const JobSpec& spec) {
  GangRequest request;
  request.num_workers = spec.num_workers();
  request.per_worker = spec.resources_per_worker();
  request.placement = spec.placement();
  return request;
}

std::string ShapeKey(const JobSpec& spec, bool placement, bool infeasible) {
  std::map<std::string, double> amounts;
  for (const auto& [name, value] : spec.resources_per_worker().amounts()) {
    if (value != 0) amounts[name] = value;
  }
  std::string key = fmt::format("{}|{}|{}", spec.num_workers(), placement ? static_cast<int>(spec.placement()) : -1,
                                infeasible ? 1 : 0);
  for (const auto& [name, value] : amounts) key += fmt::format("|{}={:.17g}", name, value);
  return key;
}

}  // namespace clusterd
