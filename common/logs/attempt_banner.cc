#include "common/logs/attempt_banner.h"

#include <fmt/format.h>

namespace clusterd {

namespace {
const std::string kStart = "--- attempt ";
}  // namespace

std::string AttemptBanner(int attempt, const std::string& node) {
  return fmt::format("{}{} on {} ---\n", kStart, attempt, node);
}

int ParseAttemptBanner(const std::string& line) {
  if (line.compare(0, kStart.size(), kStart) != 0) return -1;
  size_t pos = kStart.size();
  size_t end = pos;
  while (end < line.size() && end - pos < 9 && line[end] >= '0' && line[end] <= '9') ++end;
  if (end == pos || line.compare(end, 4, " on ") != 0) return -1;
  if (line.size() < 4 || line.compare(line.size() - 4, 4, " ---") != 0) return -1;
  return std::stoi(line.substr(pos, end - pos));
}

int LastAttemptBanner(const std::string& log) {
  // From the end: a banner starts the log or follows a newline.
  for (size_t at = log.rfind(kStart); at != std::string::npos;) {
    if (at == 0 || log[at - 1] == '\n') {
      const size_t end = log.find('\n', at);
      const int attempt = ParseAttemptBanner(log.substr(at, end == std::string::npos ? end : end - at));
      if (attempt >= 0) return attempt;
    }
    if (at == 0) break;
    at = log.rfind(kStart, at - 1);
  }
  return -1;
}

}  // namespace clusterd
