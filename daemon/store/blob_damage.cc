#include "daemon/store/blob_damage.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/sha256.h"

namespace clusterd {

BlobDamage::BlobDamage(std::mutex& mutex, BlobIndex& index, const BlobFiles& files, Hooks hooks)
    : mutex_(mutex), index_(index), files_(files), hooks_(std::move(hooks)) {}

void BlobDamage::DropLocked(const std::string& id, const std::string& why) {
  if (!index_.Has(id)) return;
  const std::vector<std::string> holders = index_.Holders(id);
  LOG_WARN("store: blob {} dropped: {}{}", id, why,
           holders.empty() ? "" : fmt::format("; what held it is lost ({})", fmt::join(holders, ", ")));
  // Whatever stands at its path goes, a directory too: else the blob stays
  // listed, and every later upload of its bytes is skipped or cannot be
  // moved into place.
  files_.Clear(id);
  hooks_.evict_blob(id, why.c_str());
  for (const std::string& owner : holders) hooks_.release_owner(owner, why);
}

Result<bool> BlobDamage::DropIfCorrupt(const std::string& id, UniqueFd file) {
  struct stat hashed {};
  if (fstat(file.get(), &hashed) != 0) return Status::IOError(fmt::format("cannot stat blob {}: {}", id, std::strerror(errno)));
  auto got = Sha256OfFd(file.get(), "blob " + id);
  if (!got.ok()) {
    DropUnreadable(id, got.status().message());
    return true;
  }
  if (*got == id) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  struct stat now {};
  if (!index_.Has(id) || stat(files_.PathOf(id).c_str(), &now) != 0 || now.st_ino != hashed.st_ino) return false;
  DropLocked(id, fmt::format("its bytes went bad on the head's disk (they hash to {})", *got));
  return !index_.Has(id);
}

void BlobDamage::DropUnreadable(const std::string& id, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  DropLocked(id, "its file on the head's disk cannot be read: " + error);
}

void BlobDamage::DropGone(std::set<std::string>& present) {
  for (auto it = present.begin(); it != present.end();) {
    if (!files_.Gone(*it)) {
      ++it;
      continue;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    DropLocked(*it, kFileGone);
    it = present.erase(it);
  }
}

}  // namespace clusterd
