#include "common/process_record.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/file_util.h"

namespace clusterd {

ProcessRecord ProcessRecord::Of(pid_t pid) {
  ProcessRecord record;
  // Gone meanwhile (ESRCH on read) or never there: an empty record.
  std::string text = ReadWholeFile(fmt::format("/proc/{}/stat", pid)).value_or("");
  // The command name (field 2) may hold spaces and parentheses: read after the last ')'.
  auto close = text.rfind(')');
  if (close == std::string::npos) return record;
  std::istringstream fields(text.substr(close + 2));
  std::string state, skip;
  pid_t ppid = 0, pgrp = 0, session = 0;
  fields >> state >> ppid >> pgrp >> session;
  for (int field = 7; field < 22 && fields; ++field) fields >> skip;  // fields 7..21
  uint64_t start = 0;
  if (!(fields >> start) || state == "Z") return record;
  record.pid = pid;
  record.start_time = start;
  record.session = session;
  record.parent = ppid;
  return record;
}

std::string ProcessRecord::Format() const { return fmt::format("{} {} {}", pid, start_time, session); }

Result<ProcessRecord> ProcessRecord::Parse(const std::string& text) {
  ProcessRecord record;
  long long pid = 0;
  unsigned long long start = 0;
  long long session = 0;
  char extra = 0;
  int got = std::sscanf(text.c_str(), "%lld %llu %lld %c", &pid, &start, &session, &extra);
  if (got != 3 || pid <= 1 || pid > (1 << 22) || session < 0) {
    return Status::InvalidArgument(fmt::format("'{}' is not a process record (pid start_time session)", text));
  }
  record.pid = static_cast<pid_t>(pid);
  record.start_time = start;
  record.session = static_cast<pid_t>(session);
  return record;
}

bool ProcessRecord::StillRunning() const {
  ProcessRecord now = Of(pid);
  return now.pid != 0 && now.start_time == start_time && now.session == session;
}

}  // namespace clusterd
