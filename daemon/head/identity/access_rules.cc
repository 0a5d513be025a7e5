#include "daemon/head/identity/access_rules.h"

#include <fmt/format.h>

#include "daemon/head/identity/user_registry.h"

namespace clusterd {

namespace {

const char* Verb(OwnedAction action) {
  switch (action) {
    case OwnedAction::kStop: return "stop it";
    case OwnedAction::kDelete: return "delete it";
    case OwnedAction::kReadLogs: return "read its logs";
    case OwnedAction::kReadOutputs: return "read its outputs";
    case OwnedAction::kReadMetrics: return "read its metrics";
  }
  return "touch it";
}

}  // namespace

std::string OwnerOf(const JobInfo& job) { return job.owner().empty() ? kAdminUser : job.owner(); }
std::string OwnerOf(const SweepInfo& sweep) { return sweep.owner().empty() ? kAdminUser : sweep.owner(); }

Status RequireUser(const Principal& caller) {
  if (caller.IsNode()) return Status::PermissionDenied(kNodeTokenOnlyRegisters);
  return Status::Ok();
}

Status MayActOn(const Principal& caller, const std::string& id, const std::string& owner, OwnedAction action) {
  RETURN_IF_ERROR(RequireUser(caller));
  if (caller.IsAdmin() || caller.user == owner) return Status::Ok();
  return Status::PermissionDenied(fmt::format("{} belongs to {}; {} may not {}", id, owner, caller.user, Verb(action)));
}

Status RequireAdmin(const Principal& caller, const std::string& command) {
  RETURN_IF_ERROR(RequireUser(caller));
  if (caller.IsAdmin()) return Status::Ok();
  return Status::PermissionDenied(fmt::format("{} is for admins; {} is not one", command, caller.user));
}

Status MayRegisterNode(const Principal& caller) {
  if (caller.IsNode() || caller.IsAdmin()) return Status::Ok();
  return Status::PermissionDenied(fmt::format(
      "user {} may not register a node: a worker joins with a node token (clusterctl token create --node) or an "
      "admin's", caller.user));
}

}  // namespace clusterd
