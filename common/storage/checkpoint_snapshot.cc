#include "common/storage/checkpoint_snapshot.h"

#include <filesystem>
#include <set>
#include <system_error>
#include <vector>

#include <fmt/format.h>

namespace clusterd {

namespace fs = std::filesystem;

namespace {

Status Failed(const std::string& what, const fs::path& path, const std::error_code& ec) {
  return Status::IOError(fmt::format("cannot {} {}: {}", what, path.string(), ec.message()));
}

// Makes `to` a copy of folder `from` in hard links (see SnapshotCheckpoint).
Status Mirror(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(to, ec))) {
    fs::remove_all(to, ec);
    if (!fs::create_directory(to, ec) && ec) return Failed("create", to, ec);
    fs::permissions(to, fs::perms::owner_all, ec);
  }
  std::set<std::string> kept;
  for (fs::directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path source = it->path(), target = to / source.filename();
    const fs::file_status status = fs::symlink_status(source, ec);
    if (ec) return Failed("stat", source, ec);
    std::error_code missing;
    const fs::file_status there = fs::symlink_status(target, missing);
    if (fs::is_directory(status)) {
      RETURN_IF_ERROR(Mirror(source, target));
    } else if (fs::is_regular_file(status)) {
      if (fs::is_regular_file(there) && fs::equivalent(source, target, missing)) {
        kept.insert(source.filename().string());
        continue;
      }
      fs::remove_all(target, missing);
      fs::create_hard_link(source, target, ec);
      if (ec) return Failed("link", source, ec);
    } else if (fs::is_symlink(status)) {
      const fs::path link = fs::read_symlink(source, ec);
      if (ec) return Failed("read", source, ec);
      fs::remove_all(target, missing);
      fs::create_symlink(link, target, ec);
      if (ec) return Failed("copy the link", source, ec);
    } else {
      continue;  // a socket or FIFO: the upload leaves it out too
    }
    kept.insert(source.filename().string());
  }
  if (ec) return Failed("list", from, ec);
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(to, ec), end; !ec && it != end; it.increment(ec)) {
    if (!kept.count(it->path().filename().string())) stale.push_back(it->path());
  }
  for (const fs::path& path : stale) fs::remove_all(path, ec);
  return Status::Ok();
}

}  // namespace

Result<std::string> SnapshotCheckpoint(const std::string& checkpoint_dir, const std::string& name) {
  const fs::path root = fs::path(checkpoint_dir) / kSnapshotFolder;
  const fs::path folder = fs::path(checkpoint_dir) / name;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(folder, ec))) {
    return Status::NotFound(fmt::format("{} is not a folder", folder.string()));
  }
  if (!fs::create_directory(root, ec) && ec) return Failed("create", root, ec);
  fs::permissions(root, fs::perms::owner_all, ec);
  Status mirrored = Mirror(folder, root / name);
  if (!mirrored.ok()) {
    RemoveSnapshot(checkpoint_dir, name);
    return mirrored;
  }
  return root.string();
}

void RemoveSnapshotsBut(const std::string& checkpoint_dir, const std::set<std::string>& names) {
  const fs::path root = fs::path(checkpoint_dir) / kSnapshotFolder;
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!names.count(it->path().filename().string())) stale.push_back(it->path());
  }
  for (const fs::path& path : stale) fs::remove_all(path, ec);
}

void RemoveSnapshot(const std::string& checkpoint_dir, const std::string& name) {
  const fs::path root = fs::path(checkpoint_dir) / kSnapshotFolder;
  std::error_code ec;
  fs::remove_all(root / name, ec);
  fs::remove(root, ec);  // only once empty
}

}  // namespace clusterd
