// Reading and checking manifests (common/storage/tree_transfer.h): the rules every
// manifest from the network must pass before a byte of it touches a disk.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "common/storage/tar_package.h"
#include "common/storage/tree_internal.h"
#include "common/storage/tree_transfer.h"

namespace clusterd {
namespace {

using tree_internal::InContext;
using tree_internal::ParentOf;

// A manifest names one file per line of its owner's folder; this bounds
// what a hostile one can make us hold in memory (about two million files).
constexpr int64_t kMaxManifestBytes = int64_t{256} << 20;
constexpr int64_t kMaxChunkBytes = int64_t{1} << 30;
constexpr int64_t kMaxFileBytes = int64_t{1} << 50;

bool IsHexId(const std::string& s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Relative, '/'-separated, without empty, "." or ".." components or NULs.
bool IsCleanPath(const std::string& path) {
  if (path.empty() || path.size() > 4096 || path.find('\0') != std::string::npos) return false;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = std::min(path.find('/', begin), path.size());
    std::string_view part(path.data() + begin, end - begin);
    if (part.empty() || part == "." || part == ".." || part.size() > 255) return false;
    begin = end + 1;
  }
  return true;
}

Status Refuse(int index, const std::string& path, const std::string& why) {
  // The path is shown escaped: it came from the network.
  return Status::InvalidArgument(fmt::format("manifest entry {} {:?}: {}", index, path, why));
}

}  // namespace

Status CheckManifest(const Manifest& manifest) {
  const int64_t chunk = manifest.chunk_bytes();
  std::set<std::string> seen, dirs;
  std::map<std::string, std::string> links;
  for (int i = 0; i < manifest.entries_size(); ++i) {
    const ManifestEntry& e = manifest.entries(i);
    const std::string& path = e.path();
    if (!IsCleanPath(path)) return Refuse(i, path, "is not a clean relative path");
    if (!seen.insert(path).second) return Refuse(i, path, "appears twice");
    std::string parent = ParentOf(path);
    if (!parent.empty() && dirs.count(parent) == 0) return Refuse(i, path, "its folder is not listed before it");
    bool is_link = !e.link_target().empty();
    if (e.is_dir() && is_link) return Refuse(i, path, "is both a folder and a symlink");
    if (e.is_dir() || is_link) {
      if (e.size() != 0 || e.chunks_size() != 0) return Refuse(i, path, "is not a file but has bytes");
      if (e.is_dir()) dirs.insert(path);
      if (is_link) links.emplace(path, e.link_target());
      continue;
    }
    if (e.size() < 0 || e.size() > kMaxFileBytes) return Refuse(i, path, fmt::format("has size {}", e.size()));
    if (e.size() > 0 && (chunk <= 0 || chunk > kMaxChunkBytes)) {
      return Refuse(i, path, fmt::format("the manifest's piece size {} is out of range", chunk));
    }
    int64_t pieces = e.size() == 0 ? 0 : e.size() / chunk + (e.size() % chunk != 0 ? 1 : 0);
    if (e.chunks_size() != pieces) {
      return Refuse(i, path, fmt::format("{} bytes need {} pieces, not {}", e.size(), pieces, e.chunks_size()));
    }
    for (const std::string& id : e.chunks()) {
      if (!IsHexId(id)) return Refuse(i, path, fmt::format("piece {:?} is not a blob id", id));
    }
  }
  for (const auto& [path, target] : links) {
    if (target.size() > 4095 || target.find('\0') != std::string::npos || !SymlinkStaysInside(path, target, links)) {
      auto it = std::find_if(manifest.entries().begin(), manifest.entries().end(),
                             [&](const ManifestEntry& e) { return e.path() == path; });
      return Refuse(static_cast<int>(it - manifest.entries().begin()), path,
                    fmt::format("is a symlink to {:?}, out of the folder", target));
    }
  }
  return Status::Ok();
}

Result<Manifest> ReadManifest(BlobStorage& store, const std::string& manifest_id) {
  std::string what = "reading manifest " + manifest_id;
  if (!IsHexId(manifest_id)) return Status::InvalidArgument(fmt::format("{:?} is not a manifest id", manifest_id));
  auto bytes = store.Fetch(manifest_id, kMaxManifestBytes);
  if (bytes.status().code() == Status::Code::kNotFound) {
    return Status::NotFound(
        fmt::format("{} has no manifest {}", store.where(), manifest_id));
  }
  if (!bytes.ok()) return InContext(bytes.status(), what, manifest_id, store.where());
  Manifest manifest;
  if (!manifest.ParseFromString(*bytes)) {
    return Status::Corruption(fmt::format("blob {} in {} is not a manifest", manifest_id,
                                          store.where()));
  }
  Status checked = CheckManifest(manifest);
  if (!checked.ok()) return InContext(checked, what, manifest_id, store.where());
  return manifest;
}

std::vector<std::string> BlobsOf(const Manifest& manifest) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const ManifestEntry& e : manifest.entries()) {
    for (const std::string& id : e.chunks()) {
      if (seen.insert(id).second) out.push_back(id);
    }
  }
  return out;
}

}  // namespace clusterd
