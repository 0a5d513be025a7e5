#include "daemon/head/identity/ownership_check.h"

#include <optional>

namespace clusterd {

namespace {

// The owner of what `id` names, nullopt when it names nothing here.
std::optional<std::string> OwnerOfId(HeadCore& core, const std::string& id, bool whole_array) {
  if (SweepManager::IsSweepId(id)) {
    auto sweep = core.sweeps().Get(id);
    if (sweep.ok()) return OwnerOf(*sweep);
    return std::nullopt;
  }
  if (const JobInfo* job = core.jobs().InfoOf(id)) return OwnerOf(*job);
  if (!whole_array) return std::nullopt;
  // An array whose first job (whose id it has) was deleted: any job of it
  // says whose it is.
  std::optional<std::string> owner;
  core.jobs().ForEachJob([&](const JobInfo& job) {
    if (!owner && job.spec().array_id() == id) owner = OwnerOf(job);
  });
  return owner;
}

}  // namespace

Status CheckOwnership(HeadCore& core, const Principal& caller, const std::string& id, bool whole_array,
                      OwnedAction action) {
  RETURN_IF_ERROR(RequireUser(caller));
  if (caller.IsAdmin()) return Status::Ok();
  std::optional<std::string> owner = OwnerOfId(core, id, whole_array);
  if (!owner) return Status::Ok();
  return MayActOn(caller, id, *owner, action);
}

}  // namespace clusterd
