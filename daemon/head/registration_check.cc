#include "daemon/head/registration_check.h"

#include <set>

#include <fmt/format.h>

#include "common/jobspec/job_spec_checks.h"
#include "common/text.h"

namespace clusterd {

namespace {

// A short printable string: what log lines and tables can show as it is.
Status CheckShortText(const std::string& text, size_t max_bytes, const std::string& what) {
  if (text.size() > max_bytes) {
    return Status::InvalidArgument(fmt::format("{} is {} bytes, more than {}", what, text.size(), max_bytes));
  }
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      return Status::InvalidArgument(fmt::format("{} may not contain control characters, got {}", what,
                                                 JsonQuote(text)));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckRegistration(const RegisterNode& request) {
  RETURN_IF_ERROR(job_spec_internal::CheckName(request.name()).WithContext("node name"));
  RETURN_IF_ERROR(CheckShortText(request.address(), kMaxAddressBytes, "the node's address"));
  RETURN_IF_ERROR(CheckShortText(request.instance_id(), kMaxLabelBytes, "the agent's instance id"));
  if (static_cast<size_t>(request.labels_size()) > kMaxNodeLabels) {
    return Status::InvalidArgument(fmt::format("{} labels, more than {}", request.labels_size(), kMaxNodeLabels));
  }
  for (const auto& [key, value] : request.labels()) {
    RETURN_IF_ERROR(job_spec_internal::CheckName(key).WithContext("a label's name"));
    RETURN_IF_ERROR(CheckShortText(value, kMaxLabelBytes, fmt::format("label {}", key)));
  }
  const auto& amounts = request.total().amounts();
  if (static_cast<size_t>(amounts.size()) > kMaxNodeResources) {
    return Status::InvalidArgument(fmt::format("{} resources, more than {}", amounts.size(), kMaxNodeResources));
  }
  for (const auto& [name, amount] : amounts) {
    RETURN_IF_ERROR(CheckShortText(name, job_spec_internal::kMaxNameLength, "a resource's name"));
    RETURN_IF_ERROR(job_spec_internal::CheckResourceName(name));
    RETURN_IF_ERROR(job_spec_internal::CheckResourceAmount(name, amount).WithContext("resource " + name));
  }
  if (static_cast<size_t>(request.gpu_indexes_size()) > kMaxNodeGpus) {
    return Status::InvalidArgument(fmt::format("{} GPUs, more than {}", request.gpu_indexes_size(), kMaxNodeGpus));
  }
  std::set<int> gpus;
  for (int gpu : request.gpu_indexes()) {
    if (gpu < 0 || !gpus.insert(gpu).second) {
      return Status::InvalidArgument(fmt::format("GPU index {} is negative or given twice", gpu));
    }
  }
  return Status::Ok();
}

}  // namespace clusterd
