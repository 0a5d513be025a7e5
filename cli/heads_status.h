// The heads of a cluster in HA, as `clusterctl status` shows them: which
// one leads, since when, its lease's age, and the standbys
// (proto/ha_heads.proto, docs/HA.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/client.h"
#include "common/status.h"
#include "cluster.pb.h"
#include "ha_heads.pb.h"

namespace clusterd::cli {

// Asks the head `client` reaches now. nullopt from a single head (it does
// not serve the list); an error when the head could not say.
Result<std::optional<HeadsReply>> FetchHeads(const HeadClient& client);

// "Heads (HA, leader: head-a):" and a line per head, the leader's with
// since when it leads and its lease's age.
std::string FormatHeads(const HeadsReply& heads, int64_t now_unix_ms);

// `clusterctl status --json`: the head's status with the heads, when it
// is one of several (HA), as its ha_heads; a single head's has none.
std::string StatusJson(ClusterStatus status, const std::optional<HeadsReply>& heads);

}  // namespace clusterd::cli
