#include "daemon/head/log_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "common/attempt_banner.h"
#include "common/text.h"

namespace clusterd {

std::string LogStore::PathOf(const std::string& job_id, int rank) const {
  const std::string old_folder = fmt::format("{}/{}", root_, job_id);
  if (in_old_folders_.count(job_id) || (!looked_at_.count(job_id) && access(old_folder.c_str(), F_OK) == 0)) {
    return fmt::format("{}/rank-{}.log", old_folder, rank);
  }
  return fmt::format("{}/{}.rank-{}.log", root_, job_id, rank);
}

void LogStore::Append(const std::string& job_id, int rank, const std::string& data) {
  if (root_.empty()) return;
  if (!root_made_) root_made_ = mkdir(root_.c_str(), 0755) == 0 || errno == EEXIST;
  if (looked_at_.insert(job_id).second && access(fmt::format("{}/{}", root_, job_id).c_str(), F_OK) == 0) {
    in_old_folders_.insert(job_id);
  }
  std::ofstream out(PathOf(job_id, rank), std::ios::app | std::ios::binary);
  out << data;
}

Result<std::string> LogStore::Read(const std::string& job_id, int rank, int64_t offset, int64_t max_bytes,
                                   int64_t* end) const {
  *end = offset;
  if (offset < 0) {
    return Status::InvalidArgument(fmt::format("offset {} into the log of {} rank {} is negative", offset, job_id, rank));
  }
  int64_t size = 0;
  std::ifstream in;
  if (!root_.empty()) {
    in.open(PathOf(job_id, rank), std::ios::binary);
    if (in) {
      in.seekg(0, std::ios::end);
      size = std::max<int64_t>(0, static_cast<int64_t>(in.tellg()));
    }
  }
  if (offset > size) {
    return Status::InvalidArgument(fmt::format("offset {} is past the end of the log of {} rank {} ({} bytes)", offset,
                                               job_id, rank, size));
  }
  // 0 <= offset <= size here, so size - offset cannot overflow.
  int64_t n = std::min(std::max<int64_t>(max_bytes, 0), size - offset);
  if (n == 0) return std::string();
  std::string data(static_cast<size_t>(n), '\0');
  in.seekg(offset);
  in.read(data.data(), n);
  data.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  *end = offset + static_cast<int64_t>(data.size());
  return data;
}

int64_t LogStore::Size(const std::string& job_id, int rank) const {
  if (root_.empty()) return 0;
  std::ifstream in(PathOf(job_id, rank), std::ios::binary | std::ios::ate);
  return in ? std::max<int64_t>(0, static_cast<int64_t>(in.tellg())) : 0;
}

std::string LogStore::Tail(const std::string& job_id, int rank, int lines) const {
  int64_t end = 0;
  // The tail of a failed rank is for a one-screen reason: 16 KiB is plenty.
  std::ifstream in(PathOf(job_id, rank), std::ios::binary | std::ios::ate);
  if (!in) return "";
  int64_t size = in.tellg();
  auto data = Read(job_id, rank, std::max<int64_t>(0, size - 16384), 16384, &end);
  return data.ok() ? LastLines(*data, lines) : "";
}

int LogStore::LastAttempt(const std::string& job_id, int rank) const {
  // Backwards a chunk at a time: the banner is near the end unless the
  // attempt printed a lot, and a log may be far larger than memory allows.
  // Chunks overlap by more than a banner's length, so none is cut in two.
  constexpr int64_t kChunk = 1 << 16, kOverlap = 1024;
  const int64_t size = Size(job_id, rank);
  for (int64_t end = size; end > 0;) {
    const int64_t begin = std::max<int64_t>(0, end - kChunk);
    int64_t read_to = 0;
    auto data = Read(job_id, rank, begin, std::min(size, end + kOverlap) - begin, &read_to);
    if (!data.ok()) return -1;
    std::string text = std::move(*data);
    // Mid-file, the first line may be the tail of a longer one: it is read
    // whole with the chunk before.
    if (begin > 0) text.erase(0, std::min(text.size(), text.find('\n') + 1));
    int attempt = LastAttemptBanner(text);
    if (attempt >= 0) return attempt;
    end = begin;
  }
  return -1;
}

}  // namespace clusterd
