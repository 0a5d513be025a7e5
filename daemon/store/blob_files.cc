#include "daemon/store/blob_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/file_util.h"

namespace clusterd {

bool IsBlobId(const std::string& id) {
  return id.size() == 64 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Status BlobFiles::Prepare() const {
  RETURN_IF_ERROR(MakeDirs(dir_ + "/blobs", 0700));
  RETURN_IF_ERROR(RemoveTree(dir_ + "/tmp"));
  return MakeDirs(dir_ + "/tmp", 0700);
}

Result<std::vector<BlobFiles::Found>> BlobFiles::Scan() const {
  DIR* top = opendir((dir_ + "/blobs").c_str());
  if (!top) return Status::IOError(fmt::format("cannot read {}/blobs: {}", dir_, std::strerror(errno)));
  std::vector<Found> found;
  while (dirent* fan = readdir(top)) {
    std::string prefix = fan->d_name;
    if (prefix.size() != 2) continue;
    DIR* sub = opendir((dir_ + "/blobs/" + prefix).c_str());
    if (!sub) continue;
    while (dirent* file = readdir(sub)) {
      std::string id = file->d_name;
      struct stat st {};
      if (!IsBlobId(id) || id.compare(0, 2, prefix) != 0 || lstat(PathOf(id).c_str(), &st) != 0 ||
          !S_ISREG(st.st_mode)) {
        continue;
      }
      found.push_back({id, static_cast<int64_t>(st.st_size),
                       static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec});
    }
    closedir(sub);
  }
  closedir(top);
  return found;
}

std::string BlobFiles::PathOf(const std::string& id) const {
  return fmt::format("{}/blobs/{}/{}", dir_, id.substr(0, 2), id);
}

std::string BlobFiles::NewTempPath(const std::string& id) {
  return fmt::format("{}/tmp/{}.{}", dir_, id.empty() ? "upload" : id, next_temp_++);
}

void BlobFiles::SetLastUse(const std::string& id, int64_t nanos) const {
  const struct timespec times[2] = {{0, UTIME_OMIT}, {nanos / 1'000'000'000, nanos % 1'000'000'000}};
  utimensat(AT_FDCWD, PathOf(id).c_str(), times, 0);
}

Status BlobFiles::Remove(const std::string& id) const {
  if (unlink(PathOf(id).c_str()) != 0 && errno != ENOENT) return Status::IOError(std::strerror(errno));
  return Status::Ok();
}

void BlobFiles::Clear(const std::string& id) const {
  std::error_code ec;
  std::filesystem::remove_all(PathOf(id), ec);
}

bool BlobFiles::Gone(const std::string& id) const {
  struct stat st {};
  return stat(PathOf(id).c_str(), &st) != 0 && errno == ENOENT;
}

Status BlobFiles::MoveIntoPlace(const std::string& temp_path, const std::string& id) const {
  const std::string path = PathOf(id);
  RETURN_IF_ERROR(MakeDirs(path.substr(0, path.rfind('/')), 0700));
  bool moved = rename(temp_path.c_str(), path.c_str()) == 0;
  if (!moved && (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)) {
    // What stands there is no blob's file (a directory): it goes.
    Clear(id);
    moved = rename(temp_path.c_str(), path.c_str()) == 0;
  }
  if (!moved) return Status::IOError(fmt::format("cannot move {} into place: {}", temp_path, std::strerror(errno)));
  return Status::Ok();
}

}  // namespace clusterd
