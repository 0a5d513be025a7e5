#include "daemon/head/log_store.h"

#include <sys/stat.h>

#include <fstream>

#include <fmt/format.h>

#include "common/text.h"

namespace clusterd {

std::string LogStore::PathOf(const std::string& job_id, int rank) const {
  return fmt::format("{}/{}/rank-{}.log", root_, job_id, rank);
}

void LogStore::Append(const std::string& job_id, int rank, const std::string& data) {
  if (root_.empty()) return;
  if (made_.insert(job_id).second) {
    mkdir(root_.c_str(), 0755);
    mkdir(fmt::format("{}/{}", root_, job_id).c_str(), 0755);
  }
  std::ofstream out(PathOf(job_id, rank), std::ios::app | std::ios::binary);
  out << data;
}

std::string LogStore::Read(const std::string& job_id, int rank, int64_t offset, int64_t max_bytes,
                           int64_t* end) const {
  *end = offset;
  if (root_.empty()) return "";
  std::ifstream in(PathOf(job_id, rank), std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  int64_t size = in.tellg();
  if (offset >= size) {
    *end = size;
    return "";
  }
  int64_t n = std::min(max_bytes, size - offset);
  std::string data(static_cast<size_t>(n), '\0');
  in.seekg(offset);
  in.read(data.data(), n);
  *end = offset + n;
  return data;
}

std::string LogStore::Tail(const std::string& job_id, int rank, int lines) const {
  int64_t end = 0;
  // The tail of a failed rank is for a one-screen reason: 16 KiB is plenty.
  std::ifstream in(PathOf(job_id, rank), std::ios::binary | std::ios::ate);
  if (!in) return "";
  int64_t size = in.tellg();
  std::string data = Read(job_id, rank, std::max<int64_t>(0, size - 16384), 16384, &end);
  return LastLines(data, lines);
}

}  // namespace clusterd
