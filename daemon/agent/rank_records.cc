#include "daemon/agent/rank_records.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/logging.h"
#include "common/process_record.h"

namespace clusterd {
namespace {

// A slot file always holds one line of this many bytes: a record padded
// with spaces, or only spaces when the slot is free (`clusterd stop` reads
// it trimmed, so both read as before). Overwritten in place, never
// truncated: ext4 writes a file back at close once it was truncated to
// zero and written again (its auto_da_alloc guard for replace-by-truncate),
// and that writeback, with the open and truncate around it, was 13% of a
// busy agent's CPU.
constexpr size_t kRecordBytes = 64;

std::string SlotLine(const std::string& record) {
  std::string line = record.substr(0, kRecordBytes - 1);
  line.resize(kRecordBytes - 1, ' ');
  return line + "\n";
}

}  // namespace

RankRecords::RankRecords(std::string dir) : dir_(std::move(dir)) {
  // The agents of one machine's session share its ranks folder: each names
  // its slots after its pid (and itself, for several in one process).
  static std::atomic<int> instances{0};
  prefix_ = fmt::format("slot-{}-{}-", getpid(), instances++);
  MakeDirs(dir_);
}

RankRecords::~RankRecords() {
  for (size_t slot = 0; slot < fds_.size(); ++slot) {
    if (fds_[slot] >= 0) close(fds_[slot]);
    // A rank still running keeps its record for `clusterd stop`.
    if (!in_use_[slot]) unlink(PathOf(slot).c_str());
  }
}

std::string RankRecords::PathOf(size_t slot) const { return fmt::format("{}/{}{}", dir_, prefix_, slot); }

size_t RankRecords::Record(pid_t pid) {
  size_t slot = std::find(in_use_.begin(), in_use_.end(), false) - in_use_.begin();
  if (slot == in_use_.size()) {
    in_use_.push_back(true);
    fds_.push_back(open(PathOf(slot).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  }
  in_use_[slot] = true;
  // `clusterd stop` kills the group only if that pid is still this rank
  // (pids are reused). Written in place: a record torn by a crash
  // mid-write does not parse, and kills nothing.
  const std::string line = SlotLine(ProcessRecord::Of(pid).Format());
  const int fd = fds_[slot];
  if (fd < 0 || pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    LOG_WARN("cannot record rank pid {} in {}: {}", pid, dir_, std::strerror(errno));
  }
  return slot;
}

void RankRecords::Clear(size_t slot) {
  if (slot >= in_use_.size()) return;
  in_use_[slot] = false;
  const std::string blank = SlotLine("");
  if (fds_[slot] >= 0) pwrite(fds_[slot], blank.data(), blank.size(), 0);
}

}  // namespace clusterd
