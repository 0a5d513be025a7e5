// Trailing metadata the head puts on its answers to clusterctl.
#pragma once

namespace clusterd {

// On an UNAVAILABLE the head decided itself (its journal cannot be
// written), not one the transport made up because no head is there.
inline constexpr char kAnsweredByHead[] = "clusterd-answered-by-head";

// The head's wall clock as it answered, in Unix milliseconds: clusterctl
// measures "how long ago" and "for how long" against it, since the head
// stamped the times it shows and this machine's clock may disagree.
inline constexpr char kHeadUnixMsMetadata[] = "clusterd-head-unix-ms";
// The same on the head's HTTP answers, for the dashboard (whose script
// spells it out: daemon/http/assets/dashboard.js).
inline constexpr char kHeadUnixMsHeader[] = "X-Clusterd-Head-Unix-Ms";

}  // namespace clusterd
