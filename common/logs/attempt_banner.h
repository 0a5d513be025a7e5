// The line that opens each attempt's output in a rank's log on the head,
// "--- attempt N on NODE ---": written by the head, found again by the head
// after a restart and by `clusterctl logs --attempt`.
#pragma once

#include <string>

namespace clusterd {

// The banner line, newline included.
std::string AttemptBanner(int attempt, const std::string& node);

// The attempt a banner line names (without its newline), or -1 for any other line.
int ParseAttemptBanner(const std::string& line);

// The attempt named by the last banner line in `log`, or -1 when it has none.
int LastAttemptBanner(const std::string& log);

}  // namespace clusterd
