#include "common/storage/tar_package.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace clusterd {
namespace {

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    parts.push_back(path.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

// An entry's path without "./" and "//", or why it is refused.
Result<std::string> CleanEntryPath(const char* raw) {
  if (raw == nullptr || raw[0] == '\0') return Status::InvalidArgument("is an empty path");
  if (raw[0] == '/') return Status::InvalidArgument("is an absolute path");
  std::vector<std::string> kept;
  for (auto& part : Split(raw)) {
    if (part == "..") return Status::InvalidArgument("has a '..' in its path");
    if (!part.empty() && part != ".") kept.push_back(std::move(part));
  }
  return Join(kept);  // "" for "./": the package root itself
}

// Removes a tree without following symlinks, making read-only folders
// writable first (a package may hold 0555 folders).
void RemoveTree(int parent_fd, const char* name) {
  int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    unlinkat(parent_fd, name, 0);
    return;
  }
  fchmod(fd, 0700);
  if (DIR* dir = fdopendir(fd)) {
    std::vector<std::string> names;
    while (dirent* d = readdir(dir)) {
      if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0) names.push_back(d->d_name);
    }
    for (const auto& n : names) RemoveTree(dirfd(dir), n.c_str());
    closedir(dir);
  } else {
    close(fd);
  }
  unlinkat(parent_fd, name, AT_REMOVEDIR);
}

using ReadArchive = std::unique_ptr<archive, decltype(&archive_read_free)>;
using WriteArchive = std::unique_ptr<archive, decltype(&archive_write_free)>;

// libarchive's read callback over a ByteSource: hands it each piece as is.
struct SourceReader {
  ByteSource* source;
  Status failed;
};

la_ssize_t ReadFromSource(archive* a, void* data, const void** buffer) {
  auto* reader = static_cast<SourceReader*>(data);
  std::string_view piece;
  reader->failed = reader->source->Next(&piece);
  if (!reader->failed.ok()) {
    archive_set_error(a, EIO, "%s", reader->failed.message().c_str());
    return -1;
  }
  *buffer = piece.data();
  return static_cast<la_ssize_t>(piece.size());
}

class Extractor {
 public:
  // Opens `in` on the package's bytes.
  using OpenFn = std::function<int(archive* in)>;

  Extractor(std::string name, std::string into) : name_(std::move(name)), into_(std::move(into)) {}

  Status Run(const OpenFn& open) {
    ReadArchive in(archive_read_new(), archive_read_free);
    WriteArchive out(archive_write_disk_new(), archive_write_free);
    if (!in || !out) return Status::Internal("libarchive: out of memory");
    archive_read_support_format_tar(in.get());
    // Our own checks come first; these are libarchive's second line. Its
    // NOABSOLUTEPATHS cannot be used: we prefix every entry with the
    // (absolute, symlink-free) temp folder instead of chdir-ing into it.
    archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                                                  ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                  ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_NO_OVERWRITE);
    if (open(in.get()) != ARCHIVE_OK) return Status::Corruption(Where() + archive_error_string(in.get()));
    for (;;) {
      archive_entry* entry = nullptr;
      int r = archive_read_next_header(in.get(), &entry);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) return Status::Corruption(Where() + archive_error_string(in.get()));
      RETURN_IF_ERROR(Entry(in.get(), out.get(), entry));
    }
    // Close applies the folders' deferred permissions and mtimes.
    if (archive_write_close(out.get()) != ARCHIVE_OK) return Status::IOError(Where() + archive_error_string(out.get()));
    for (const auto& [path, target] : links_) {
      if (!SymlinkStaysInside(path, target, links_)) return Refuse(path, "is a symlink (-> " + target + ") out of the package");
    }
    return Status::Ok();
  }

 private:
  std::string Where() const { return name_ + ": "; }

  Status Refuse(const std::string& entry, const std::string& why) const {
    return Status::InvalidArgument(fmt::format("{}: entry {} {}; refused", name_, entry, why));
  }

  Status Entry(archive* in, archive* out, archive_entry* entry) {
    const char* raw = archive_entry_pathname(entry);
    auto clean = CleanEntryPath(raw);
    if (!clean.ok()) return Refuse(raw != nullptr ? raw : "(no name)", clean.status().message());
    const std::string& path = *clean;
    if (path.empty()) return Status::Ok();  // "./" itself: the temp folder stands for it
    const std::string& shown = path;
    if (archive_entry_hardlink(entry) != nullptr) return Refuse(shown, "is a hard link");
    mode_t type = archive_entry_filetype(entry);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) return Refuse(shown, "is a device, FIFO or socket");
    if (archive_entry_mode(entry) & (S_ISUID | S_ISGID)) return Refuse(shown, "has a setuid or setgid bit");
    if (!seen_.insert(path).second) return Refuse(shown, "appears twice");
    for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      if (links_.count(path.substr(0, slash))) return Refuse(shown, "lies under symlink " + path.substr(0, slash));
    }
    if (type == AE_IFLNK) {
      const char* target = archive_entry_symlink(entry);
      if (target == nullptr || target[0] == '\0') return Refuse(shown, "is a symlink without a target");
      // Relative targets are checked once every symlink is known.
      if (target[0] == '/') return Refuse(shown, fmt::format("is a symlink (-> {}) out of the package", target));
      links_.emplace(path, target);
    }
    archive_entry_set_pathname(entry, (into_ + "/" + path).c_str());
    if (archive_write_header(out, entry) < ARCHIVE_WARN) return DiskError(shown, out);
    if (type == AE_IFREG && archive_entry_size(entry) > 0) {
      const void* block;
      size_t size;
      int64_t offset;
      int r;
      while ((r = archive_read_data_block(in, &block, &size, &offset)) == ARCHIVE_OK) {
        if (archive_write_data_block(out, block, size, offset) < ARCHIVE_WARN) return DiskError(shown, out);
      }
      if (r != ARCHIVE_EOF) return Status::Corruption(Where() + "entry " + shown + ": " + archive_error_string(in));
    }
    if (archive_write_finish_entry(out) < ARCHIVE_WARN) return DiskError(shown, out);
    return Status::Ok();
  }

  Status DiskError(const std::string& entry, archive* out) const {
    return Status::IOError(fmt::format("{}: entry {}: {}", name_, entry, archive_error_string(out)));
  }

  const std::string name_;
  const std::string into_;
  std::set<std::string> seen_;
  std::map<std::string, std::string> links_;
};

}  // namespace

bool SymlinkStaysInside(const std::string& link_path, const std::string& target,
                        const std::map<std::string, std::string>& links) {
  if (target.empty() || target[0] == '/') return false;
  std::vector<std::string> where = Split(link_path);
  where.pop_back();  // resolution starts in the link's folder
  std::deque<std::string> todo;
  for (auto& part : Split(target)) todo.push_back(std::move(part));
  int hops = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (where.empty()) return false;
      where.pop_back();
      continue;
    }
    where.push_back(std::move(part));
    auto link = links.find(Join(where));
    if (link == links.end()) continue;
    if (++hops > 40) return true;  // the kernel gives up (ELOOP) before getting anywhere
    if (link->second.empty() || link->second[0] == '/') return false;
    where.pop_back();
    auto parts = Split(link->second);
    todo.insert(todo.begin(), parts.begin(), parts.end());
  }
  return true;
}

namespace {

// Extracts into a temp folder beside dest_dir, then, if `verify` (when
// given) says the bytes were right, renames it into place.
Status ExtractInto(const std::string& name, const std::string& dest_dir, const Extractor::OpenFn& open,
                   ByteSource* verify) {
  std::string dest = dest_dir;
  while (dest.size() > 1 && dest.back() == '/') dest.pop_back();
  struct stat st;
  if (lstat(dest.c_str(), &st) == 0) return Status::AlreadyExists(dest + " already exists");
  size_t slash = dest.rfind('/');
  std::string parent = slash == std::string::npos ? "." : (slash == 0 ? "/" : dest.substr(0, slash));
  std::string base = slash == std::string::npos ? dest : dest.substr(slash + 1);
  std::string temp = parent + "/." + base + ".tmp-XXXXXX";
  if (mkdtemp(temp.data()) == nullptr) {
    return Status::IOError(fmt::format("cannot make a folder in {}: {}", parent, std::strerror(errno)));
  }
  char real[PATH_MAX];
  Status status = realpath(temp.c_str(), real) != nullptr
                      ? Extractor(name, real).Run(open)
                      : Status::IOError(fmt::format("{}: {}", temp, std::strerror(errno)));
  if (verify != nullptr) {
    Status verified = verify->Finish();
    if (!verified.ok()) status = verified;
  }
  if (status.ok() && rename(temp.c_str(), dest.c_str()) != 0) {
    status = (errno == EEXIST || errno == ENOTEMPTY)
                 ? Status::AlreadyExists(dest + " already exists")
                 : Status::IOError(fmt::format("cannot rename {} to {}: {}", temp, dest, std::strerror(errno)));
  }
  if (!status.ok()) RemoveTree(AT_FDCWD, temp.c_str());
  return status;
}

}  // namespace

Status ExtractPackage(const std::string& archive_path, const std::string& dest_dir) {
  auto open = [&](archive* in) { return archive_read_open_filename(in, archive_path.c_str(), 1 << 20); };
  return ExtractInto("package " + archive_path, dest_dir, open, nullptr);
}

Status ExtractPackage(ByteSource* source, const std::string& name, const std::string& dest_dir) {
  SourceReader reader{source, Status::Ok()};
  auto open = [&](archive* in) { return archive_read_open(in, &reader, nullptr, ReadFromSource, nullptr); };
  return ExtractInto(name, dest_dir, open, source);
}

}  // namespace clusterd
