// Who may do what (docs/SHARING.md, "Users and tokens"): everyone may look
// at the cluster and its queue; only a job's owner or an admin may stop or
// delete it, or read its logs, outputs and metrics; user and token commands are an
// admin's; a node token may register a node and nothing else. Each refusal
// names the rule ("job-0007 belongs to alice; bob may not stop it").
// Plain functions of a Principal and a record: no state.
#pragma once

#include <string>

#include "cluster.pb.h"
#include "common/status.h"
#include "daemon/head/identity/principal.h"

namespace clusterd {

enum class OwnedAction { kStop, kDelete, kReadLogs, kReadOutputs, kReadMetrics };

// The owner a record names; a record made before jobs had owners is the
// admin user's (kAdminUser).
std::string OwnerOf(const JobInfo& job);
std::string OwnerOf(const SweepInfo& sweep);

// The owner of what `id` names (a job, an array or a sweep), or an admin:
// OK. Anyone else: PermissionDenied naming id, owner, caller and action.
Status MayActOn(const Principal& caller, const std::string& id, const std::string& owner, OwnedAction action);
// A user's call, any user's: a node token is refused.
Status RequireUser(const Principal& caller);
// An admin's call: `command` names it in the refusal ("user add is for
// admins; bob is not one").
Status RequireAdmin(const Principal& caller, const std::string& command);
// An agent's registration: a node token or an admin's token.
Status MayRegisterNode(const Principal& caller);

// The one sentence a node token gets outside registration.
inline constexpr char kNodeTokenOnlyRegisters[] = "a node token may only register a node";

}  // namespace clusterd
