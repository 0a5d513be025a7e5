// The daemons' own logs on a simulated machine, read from the benchmark's
// side: clusterd writes <session>/logs/{head,worker}-PID.log under
// /tmp/clusterd, one line per event stamped "YYYY-MM-DDTHH:MM:SS.mmmZ"
// (CLOCK_REALTIME, which every simulated machine shares, truncated to the
// millisecond). A benchmark uses them to split a measured time into the
// product's steps without touching the product.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "machines.h"

namespace clusterd::bench {

struct LogLine {
  int64_t ns = 0;  // the line's stamp (a whole millisecond)
  std::string text;
};

// Every line of the machine's logs of `role` ("head" or "worker"), from all
// of its sessions and daemons (a restarted one writes a new file), by time.
std::vector<LogLine> ReadDaemonLogs(testing::Machine& machine, const std::string& role);

// The stamp of the first line that matches `pattern` (std::regex_search)
// and was logged no earlier than the millisecond of `since_ns`.
std::optional<int64_t> FirstLogged(const std::vector<LogLine>& lines, const std::regex& pattern, int64_t since_ns);

// `text` with regex special characters escaped (for job ids, node names).
std::string RegexQuote(const std::string& text);

}  // namespace clusterd::bench
