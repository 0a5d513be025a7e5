// BlobStore, the part for blobs gone bad on the head's disk: a file cut
// short or changed (DropIfCorrupt, asked by a client whose download failed
// its hash), gone (OpenForRead, Missing) or unreadable (DropUnreadable).
// Each is dropped with every owner that held it, so that the job records
// stop offering what cannot be served and the next upload of the same
// bytes is taken again.
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/logging.h"
#include "common/sha256.h"
#include "daemon/store/blob_store.h"

namespace clusterd {

void BlobStore::DropDamagedLocked(const std::string& id, const std::string& why) {
  if (!blobs_.count(id)) return;
  std::vector<std::string> holders;
  for (const auto& [owner, held] : owners_) {
    if (held.ids.count(id)) holders.push_back(owner);
  }
  LOG_WARN("store: blob {} dropped: {}{}", id, why,
           holders.empty() ? "" : fmt::format("; what held it is lost ({})", fmt::join(holders, ", ")));
  // Whatever stands at its path goes, a directory too (found by
  // exploratory testing: one stood there, the blob stayed listed, and every
  // later upload of its bytes was skipped or could not be moved into place).
  std::error_code ec;
  std::filesystem::remove_all(PathOf(id), ec);
  EvictLocked(id, why.c_str());
  for (const std::string& owner : holders) {
    ReleaseLocked(owner);
    if (on_released_) on_released_(owner, why);
  }
}

std::vector<std::string> BlobStore::Missing(const std::vector<std::string>& ids) {
  std::set<std::string> present;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& id : ids) {
      auto it = blobs_.find(id);
      if (it == blobs_.end()) continue;
      Touch(id, it->second);
      present.insert(id);
    }
  }
  // Outside the lock: a stat per piece the store has (an unchanged file's).
  for (auto it = present.begin(); it != present.end();) {
    struct stat st {};
    if (stat(PathOf(*it).c_str(), &st) == 0 || errno != ENOENT) {
      ++it;
      continue;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    DropDamagedLocked(*it, kFileGone);
    it = present.erase(it);
  }
  std::vector<std::string> missing;
  for (const std::string& id : ids) {
    if (!present.count(id)) missing.push_back(id);
  }
  return missing;
}

Result<bool> BlobStore::DropIfCorrupt(const std::string& id) {
  if (!Has(id)) return false;
  auto fd = OpenForRead(id);
  if (!fd.ok()) return fd.status().code() == Status::Code::kNotFound ? Result<bool>(true) : fd.status();
  UniqueFd file{*fd};
  struct stat hashed {};
  if (fstat(file.get(), &hashed) != 0) return Status::IOError(fmt::format("cannot stat blob {}: {}", id, std::strerror(errno)));
  auto got = Sha256OfFd(file.get(), "blob " + id);
  if (!got.ok()) {
    DropUnreadable(id, got.status().message());
    return true;
  }
  if (*got == id) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  // Only the very file hashed: one evicted and uploaded anew meanwhile is good.
  struct stat now {};
  if (!blobs_.count(id) || stat(PathOf(id).c_str(), &now) != 0 || now.st_ino != hashed.st_ino) return false;
  DropDamagedLocked(id, fmt::format("its bytes went bad on the head's disk (they hash to {})", *got));
  return !blobs_.count(id);
}

void BlobStore::DropUnreadable(const std::string& id, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  DropDamagedLocked(id, "its file on the head's disk cannot be read: " + error);
}

}  // namespace clusterd
