// DownloadTree and DownloadInto (common/storage/tree_transfer.h). Both write a
// checked manifest through one TreeWriter: folders first, then every file
// under a temporary name (its pieces pwritten by several streams), then the
// renames. Every path is opened from the root's descriptor one component at
// a time with O_NOFOLLOW, so no symlink in the destination is ever followed.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/run_tasks.h"
#include "common/storage/tree_internal.h"
#include "common/storage/tree_transfer.h"

namespace clusterd {
namespace {

using tree_internal::InContext;
using tree_internal::ParentOf;

uint64_t RandomToken() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device();
}

// A sibling name for work in progress: hidden, and short enough for NAME_MAX.
std::string HiddenName(const std::string& name, const char* kind, uint64_t token, size_t index) {
  return fmt::format(".{}.{}-{:016x}-{}", name.substr(0, 180), kind, token, index);
}

class TreeWriter {
 public:
  // `root_fd` is the folder written into; `shown` names it in errors.
  // `fresh`: the folder is new and empty (DownloadTree).
  TreeWriter(BlobStorage& store, const Manifest& manifest, std::string shown, int root_fd, bool fresh,
             const TreeDownloadOptions& options)
      : store_(store), manifest_(manifest), shown_(std::move(shown)), root_fd_(root_fd), fresh_(fresh),
        options_(options), token_(RandomToken()), files_(static_cast<size_t>(manifest.entries_size())) {}

  // Writes everything; on error removes what it made (not in a fresh root,
  // which the caller removes whole).
  Status Run() {
    Status status = MakeFolders();
    if (status.ok()) status = WriteFiles();
    if (status.ok()) status = Commit();
    if (!status.ok() && !fresh_) Abort();
    return status;
  }

 private:
  struct File {
    std::string temp;   // its temporary name in its folder, once made
    UniqueFd fd;        // open while pieces arrive
    int64_t pending = 0;
    bool placed = false;
  };

  std::string Shown(const std::string& rel) const { return shown_ + "/" + rel; }

  Status DiskError(const std::string& what, const std::string& rel, int err) const {
    return Status::IOError(fmt::format("cannot {} {}: {}", what, Shown(rel), std::strerror(err)));
  }

  // Folder `rel` of the tree, opened a component at a time, never through a symlink.
  Result<UniqueFd> OpenDir(const std::string& rel) const {
    UniqueFd fd(openat(root_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.ok()) return DiskError("open", ".", errno);
    size_t begin = 0;
    while (!rel.empty() && begin <= rel.size()) {
      size_t end = std::min(rel.find('/', begin), rel.size());
      std::string part = rel.substr(begin, end - begin);
      UniqueFd next(openat(fd.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!next.ok()) {
        std::string at = rel.substr(0, end);
        if (errno == ELOOP || errno == ENOTDIR) {
          return Status::InvalidArgument(fmt::format("{} is not a folder (a symlink is never followed)", Shown(at)));
        }
        return DiskError("open", at, errno);
      }
      fd = std::move(next);
      begin = end + 1;
    }
    return fd;
  }

  // The folder of entry `rel`, reusing the last one opened (entries come
  // sorted, so neighbours share it). Serial phases only.
  Result<int> ParentFd(const std::string& rel) {
    std::string parent = ParentOf(rel);
    if (!cached_dir_.ok() || parent != cached_path_) {
      cached_dir_.Reset();
      ASSIGN_OR_RETURN(cached_dir_, OpenDir(parent));
      cached_path_ = parent;
    }
    return cached_dir_.get();
  }

  // Makes the missing folders and checks, before any byte moves, that no
  // folder stands where a file or symlink goes.
  Status MakeFolders() {
    for (const ManifestEntry& e : manifest_.entries()) {
      ASSIGN_OR_RETURN(int parent, ParentFd(e.path()));
      std::string name = BaseName(e.path());
      struct stat st;
      if (e.is_dir()) {
        if (mkdirat(parent, name.c_str(), 0700) == 0) {
          made_.push_back(&e);
          continue;
        }
        if (errno != EEXIST) return DiskError("make folder", e.path(), errno);
        if (fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
          return Status::FailedPrecondition(fmt::format("{} is in the way of a folder", Shown(e.path())));
        }
      } else if (!fresh_ && fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
        return Status::FailedPrecondition(
            fmt::format("{} is a folder, where the download has a {}", Shown(e.path()),
                        e.link_target().empty() ? "file" : "symlink"));
      }
    }
    return Status::Ok();
  }

  // Every file's bytes under its temporary name, synced; pieces in file
  // order, so only about `parallel` files are open at once.
  Status WriteFiles() {
    const int64_t chunk = manifest_.chunk_bytes();
    struct Task {
      int file;
      int piece;
    };
    std::vector<Task> tasks;
    for (int i = 0; i < manifest_.entries_size(); ++i) {
      const ManifestEntry& e = manifest_.entries(i);
      if (e.is_dir() || !e.link_target().empty()) continue;
      total_ += e.size();
      files_[i].pending = e.chunks_size();
      if (e.chunks_size() == 0) {
        RETURN_IF_ERROR(Create(i));
        RETURN_IF_ERROR(Finish(e, std::move(files_[i].fd)));
      }
      for (int j = 0; j < e.chunks_size(); ++j) tasks.push_back({i, j});
    }
    const int parallel = options_.parallel > 0 ? options_.parallel : store_.ParallelReads();
    // Fewer pieces than streams (a 10 MiB file is one S3 piece): each piece
    // gets a share of the rest as ranged reads of its own.
    const int streams = tasks.empty() ? 1 : std::max<int>(1, parallel / static_cast<int>(tasks.size()));
    return RunTasks(parallel, tasks.size(), [&](size_t t) -> Status {
      const Task task = tasks[t];
      const ManifestEntry& e = manifest_.entries(task.file);
      int fd;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!files_[task.file].fd.ok()) RETURN_IF_ERROR(Create(task.file));
        fd = files_[task.file].fd.get();
      }
      int64_t offset = int64_t{task.piece} * chunk;
      int64_t last = 0;
      auto progress = [&](int64_t done, int64_t) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_ += done - last;
        last = done;
        if (options_.progress) options_.progress(done_, total_);
      };
      Status got = store_.DownloadRange(e.chunks(task.piece), fd, offset, std::min(chunk, e.size() - offset),
                                        Shown(e.path()), progress, streams);
      if (!got.ok()) return got.WithContext(fmt::format("{} piece {}", Shown(e.path()), task.piece));
      UniqueFd complete;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--files_[task.file].pending == 0) complete = std::move(files_[task.file].fd);
      }
      return complete.ok() ? Finish(e, std::move(complete)) : Status::Ok();
    });
  }

  // REQUIRES: serial, or mutex_ held.
  Status Create(int i) {
    const ManifestEntry& e = manifest_.entries(i);
    ASSIGN_OR_RETURN(UniqueFd parent, OpenDir(ParentOf(e.path())));
    std::string temp = HiddenName(BaseName(e.path()), "part", token_, static_cast<size_t>(i));
    // Read and write: a piece fetched in ranges is hashed from what was written.
    UniqueFd fd(openat(parent.get(), temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.ok()) return DiskError("create", e.path(), errno);
    files_[i].temp = std::move(temp);
    files_[i].fd = std::move(fd);
    return Status::Ok();
  }

  // The file's mode, and its bytes on disk before any rename shows them.
  Status Finish(const ManifestEntry& e, UniqueFd fd) {
    if (fchmod(fd.get(), e.mode() & 0777) != 0) return DiskError("set the mode of", e.path(), errno);
    if (fsync(fd.get()) != 0) return DiskError("sync", e.path(), errno);
    return Status::Ok();
  }

  // Renames the files into place, makes the symlinks, then gives the
  // folders their modes (last, so a read-only one was writable meanwhile).
  Status Commit() {
    for (int i = 0; i < manifest_.entries_size(); ++i) {
      const ManifestEntry& e = manifest_.entries(i);
      if (e.is_dir()) continue;
      ASSIGN_OR_RETURN(int parent, ParentFd(e.path()));
      File& file = files_[i];
      if (!e.link_target().empty()) {
        file.temp = HiddenName(BaseName(e.path()), "link", token_, static_cast<size_t>(i));
        if (symlinkat(e.link_target().c_str(), parent, file.temp.c_str()) != 0) {
          file.temp.clear();
          return DiskError("make symlink", e.path(), errno);
        }
      }
      if (renameat(parent, file.temp.c_str(), parent, BaseName(e.path()).c_str()) != 0) {
        return DiskError("put in place", e.path(), errno);
      }
      file.placed = true;
    }
    cached_dir_.Reset();
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      ASSIGN_OR_RETURN(UniqueFd dir, OpenDir((*it)->path()));
      if (fchmod(dir.get(), (*it)->mode() & 0777) != 0) return DiskError("set the mode of", (*it)->path(), errno);
    }
    // The renames are on disk once their folders are synced.
    for (const ManifestEntry& e : manifest_.entries()) {
      if (!e.is_dir()) continue;
      ASSIGN_OR_RETURN(UniqueFd dir, OpenDir(e.path()));
      if (fsync(dir.get()) != 0) return DiskError("sync", e.path(), errno);
    }
    if (fsync(root_fd_) != 0) return DiskError("sync", ".", errno);
    return Status::Ok();
  }

  // Removes the temporaries and, when empty, the folders this run made.
  void Abort() {
    cached_dir_.Reset();
    for (int i = 0; i < manifest_.entries_size(); ++i) {
      File& file = files_[i];
      file.fd.Reset();
      if (file.temp.empty() || file.placed) continue;
      auto parent = OpenDir(ParentOf(manifest_.entries(i).path()));
      if (parent.ok()) unlinkat(parent->get(), file.temp.c_str(), 0);
    }
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      auto parent = OpenDir(ParentOf((*it)->path()));
      if (parent.ok()) unlinkat(parent->get(), BaseName((*it)->path()).c_str(), AT_REMOVEDIR);
    }
  }

  BlobStorage& store_;
  const Manifest& manifest_;
  const std::string shown_;
  const int root_fd_;
  const bool fresh_;
  const TreeDownloadOptions& options_;
  const uint64_t token_;
  std::vector<File> files_;  // by entry index
  std::vector<const ManifestEntry*> made_;
  UniqueFd cached_dir_;
  std::string cached_path_;
  std::mutex mutex_;  // files_ while pieces arrive, and the progress counts
  int64_t total_ = 0;
  int64_t done_ = 0;
};

std::string Trimmed(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Renames the finished folder `temp` to `dest`, unless `dest` exists.
Status PutInPlace(const std::string& temp, const std::string& dest) {
  if (renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE) == 0) return Status::Ok();
  int err = errno;
  if (err == EINVAL) {  // a filesystem without RENAME_NOREPLACE: nearly as good
    struct stat st;
    if (lstat(dest.c_str(), &st) == 0) err = EEXIST;
    else if (rename(temp.c_str(), dest.c_str()) == 0) return Status::Ok();
    else err = errno;
  }
  if (err == EEXIST || err == ENOTEMPTY) return Status::AlreadyExists(dest + " appeared while it was being restored");
  return Status::IOError(fmt::format("cannot rename {} to {}: {}", temp, dest, std::strerror(err)));
}

Status Restore(BlobStorage& store, const std::string& manifest_id, const std::string& dest,
               const TreeDownloadOptions& options) {
  struct stat st;
  if (lstat(dest.c_str(), &st) == 0) return Status::AlreadyExists(dest + " already exists");
  ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(store, manifest_id));
  std::string parent = ParentOf(dest);
  if (parent.empty()) parent = dest[0] == '/' ? "/" : ".";
  std::string temp = parent + "/" + HiddenName(BaseName(dest), "restore", RandomToken(), 0);
  if (mkdir(temp.c_str(), 0777) != 0) {
    return Status::IOError(fmt::format("cannot make a folder in {}: {}", parent, std::strerror(errno)));
  }
  UniqueFd root(open(temp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  Status status = root.ok() ? TreeWriter(store, manifest, dest, root.get(), true, options).Run()
                            : Status::IOError(fmt::format("cannot open {}: {}", temp, std::strerror(errno)));
  if (status.ok()) status = PutInPlace(temp, dest);
  if (!status.ok()) {
    RemoveTree(temp);
    return status;
  }
  UniqueFd parent_fd(open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent_fd.ok()) fsync(parent_fd.get());  // the rename itself; a failure here loses nothing already there
  return Status::Ok();
}

}  // namespace

Status DownloadTree(BlobStorage& store, const std::string& manifest_id, const std::string& dest,
                    const TreeDownloadOptions& options) {
  std::string path = Trimmed(dest);
  if (path.empty()) return Status::InvalidArgument("no folder to restore into");
  return InContext(Restore(store, manifest_id, path, options),
                   fmt::format("restoring {} into {}", manifest_id, path), path, store.where());
}

Status DownloadInto(BlobStorage& store, const std::string& manifest_id, const std::string& dest,
                    const TreeDownloadOptions& options) {
  std::string path = Trimmed(dest);
  std::string what = fmt::format("downloading {} into {}", manifest_id, path);
  UniqueFd root(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) {
    return Status::NotFound(fmt::format("{}: cannot open folder {}: {}", what, path, std::strerror(errno)));
  }
  auto manifest = ReadManifest(store, manifest_id);
  if (!manifest.ok()) return InContext(manifest.status(), what, path, store.where());
  Status written = TreeWriter(store, *manifest, path, root.get(), false, options).Run();
  return InContext(written, what, path, store.where());
}

}  // namespace clusterd
