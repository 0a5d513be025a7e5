#include "daemon_logs.h"

#include <time.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace clusterd::bench {

namespace fs = std::filesystem;

namespace {

// "2026-11-22T04:26:01.123Z I ..." -> ns since the epoch; nullopt otherwise.
std::optional<int64_t> StampOf(const std::string& line) {
  std::tm tm{};
  int millis = 0;
  if (line.size() < 24 || line[23] != 'Z' ||
      std::sscanf(line.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &millis) != 7) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000000000 + static_cast<int64_t>(millis) * 1000000;
}

}  // namespace

std::vector<LogLine> ReadDaemonLogs(testing::Machine& machine, const std::string& role) {
  std::vector<LogLine> lines;
  std::error_code ec;
  // Not through session_latest: it may be an absolute symlink, which
  // HostPath cannot follow.
  for (const auto& entry : fs::recursive_directory_iterator(machine.HostPath("/tmp/clusterd"), ec)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || entry.path().parent_path().filename() != "logs" ||
        name.rfind(role + "-", 0) != 0 || entry.path().extension() != ".log") {
      continue;
    }
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      if (auto ns = StampOf(line)) lines.push_back({*ns, line});
    }
  }
  std::stable_sort(lines.begin(), lines.end(), [](const LogLine& a, const LogLine& b) { return a.ns < b.ns; });
  return lines;
}

std::optional<int64_t> FirstLogged(const std::vector<LogLine>& lines, const std::regex& pattern, int64_t since_ns) {
  int64_t since_ms = since_ns / 1000000 * 1000000;
  for (const LogLine& line : lines) {
    if (line.ns >= since_ms && std::regex_search(line.text, pattern)) return line.ns;
  }
  return std::nullopt;
}

std::string RegexQuote(const std::string& text) {
  static const std::string special = "\\^$.|?*+()[]{}";
  std::string out;
  for (char c : text) {
    if (special.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace clusterd::bench
