// The owner rule applied to what an id names on this head: a job, an
// array (its jobs share their owner) or a sweep. Used by every front end
// (gRPC, the HTTP API, the dashboard) before it stops, deletes or reads
// logs or outputs, so that each obeys the same rule in the same words.
// NOT thread-safe: runs on the head's event loop, as the core does.
#pragma once

#include <string>

#include "common/status.h"
#include "daemon/head/head_core.h"
#include "daemon/head/identity/access_rules.h"
#include "daemon/head/identity/principal.h"

namespace clusterd {

// OK when `caller` may do `action` to what `id` names, or when the id names
// nothing here (the call itself then says it is unknown); else
// PermissionDenied naming the owner and the rule (access_rules.h).
Status CheckOwnership(HeadCore& core, const Principal& caller, const std::string& id, bool whole_array,
                      OwnedAction action);

}  // namespace clusterd
