// UploadTree (common/storage/tree_transfer.h): scan (tree_scan.cc), hash the pieces
// (or take their ids from the hash cache), one MissingBlobs call, send what
// the store lacks, then the manifest.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "common/storage/hash_cache.h"
#include "common/run_tasks.h"
#include "common/sha256.h"
#include "common/storage/tree_internal.h"
#include "common/storage/tree_transfer.h"

namespace clusterd {
namespace {

using tree_internal::InContext;
using tree_internal::ScannedEntry;
using tree_internal::ScannedPaths;
using tree_internal::ScanPaths;
using tree_internal::SameBytes;
using tree_internal::StampOfStat;

constexpr int64_t kMaxChunkBytes = int64_t{1} << 30;
constexpr size_t kReadBytes = 1 << 20;
// Ids per MissingBlobs call: well under gRPC's 4 MiB message limit.
constexpr size_t kIdsPerCall = 16384;

// The hash cache keys one entry per piece. No file name ends in "\n#N#N"
// twice over, so the key stands for one (path, piece size, piece) only.
std::string PieceKey(const std::string& path, int64_t chunk_bytes, int64_t piece) {
  return fmt::format("{}\n#{}#{}", path, chunk_bytes, piece);
}

constexpr char kChangedWhileUploading[] = " changed while it was being uploaded";

class Uploader {
 public:
  Uploader(BlobStorage& store, std::string root, const TreeUploadOptions& options)
      : store_(store), root_(std::move(root)), options_(options) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    if (options_.chunk_bytes == 0) options_.chunk_bytes = store_.PieceBytes();
  }

  Result<UploadedTree> Run(const std::vector<std::string>& paths) {
    if (options_.chunk_bytes <= 0 || options_.chunk_bytes > kMaxChunkBytes) {
      return Status::InvalidArgument(fmt::format("piece size {} is out of range", options_.chunk_bytes));
    }
    ASSIGN_OR_RETURN(scan_, ScanPaths(root_, paths));
    result_.files = scan_.files;
    result_.bytes = scan_.bytes;
    result_.missing = scan_.missing;
    result_.skipped = scan_.skipped;
    RETURN_IF_ERROR(HashFiles());
    sending_ = true;
    RETURN_IF_ERROR(Send());
    return std::move(result_);
  }
  // Whether a failure of Run came from sending, not from this side's files.
  bool sending() const { return sending_; }

 private:
  std::string Full(const std::string& rel) const { return rel.empty() ? root_ : root_ + "/" + rel; }

  Status Unreadable(const std::string& rel, int err) const {
    return Status::IOError(fmt::format("cannot read {}: {}", Full(rel), std::strerror(err)));
  }

  Status Changed(const std::string& rel) const {
    return Status::IOError(fmt::format("{}{}", Full(rel), kChangedWhileUploading));
  }

  // Every piece's id: from the cache when the file's stamp is unchanged,
  // else read (pread, a piece per task) and hashed.
  Status HashFiles() {
    const int64_t chunk = options_.chunk_bytes;
    struct Task {
      ScannedEntry* item;
      int64_t piece;
    };
    std::vector<Task> tasks;
    std::vector<ScannedEntry*> hashed;
    for (auto& [path, item] : scan_.entries) {
      int64_t size = item.entry.size();
      if (size == 0) continue;
      int64_t pieces = (size + chunk - 1) / chunk;
      std::vector<std::string> ids;
      for (int64_t j = 0; options_.cache != nullptr && j < pieces; ++j) {
        auto id = options_.cache->Lookup(PieceKey(path, chunk, j), item.stamp);
        if (!id) break;
        ids.push_back(std::move(*id));
      }
      if (static_cast<int64_t>(ids.size()) == pieces) {
        for (auto& id : ids) item.entry.add_chunks(std::move(id));
        continue;
      }
      for (int64_t j = 0; j < pieces; ++j) {
        item.entry.add_chunks();
        tasks.push_back({&item, j});
      }
      hashed.push_back(&item);
      result_.hashed_bytes += size;
    }
    RETURN_IF_ERROR(RunTasks(options_.parallel, tasks.size(), [&](size_t i) {
      const Task& task = tasks[i];
      return HashPiece(task.item, task.piece);
    }));
    for (ScannedEntry* item : hashed) {
      for (int j = 0; options_.cache != nullptr && j < item->entry.chunks_size(); ++j) {
        options_.cache->Put(PieceKey(item->entry.path(), chunk, j), item->stamp, item->entry.chunks(j));
      }
    }
    return Status::Ok();
  }

  Status HashPiece(ScannedEntry* item, int64_t piece) const {
    const std::string& rel = item->entry.path();
    UniqueFd fd(open(Full(rel).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.ok()) return errno == ENOENT || errno == ELOOP ? Changed(rel) : Unreadable(rel, errno);
    struct stat st;
    if (fstat(fd.get(), &st) != 0) return Unreadable(rel, errno);
    if (!SameBytes(StampOfStat(st), item->stamp)) return Changed(rel);
    int64_t offset = piece * options_.chunk_bytes;
    int64_t end = std::min(offset + options_.chunk_bytes, item->entry.size());
    std::unique_ptr<char[]> buffer(new char[kReadBytes]);
    Sha256 sha;
    while (offset < end) {
      size_t want = static_cast<size_t>(std::min<int64_t>(kReadBytes, end - offset));
      ssize_t n = pread(fd.get(), buffer.get(), want, offset);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Unreadable(rel, errno);
      if (n == 0) return Changed(rel);
      sha.Update(buffer.get(), static_cast<size_t>(n));
      offset += n;
    }
    if (fstat(fd.get(), &st) != 0) return Unreadable(rel, errno);
    if (!SameBytes(StampOfStat(st), item->stamp)) return Changed(rel);
    *item->entry.mutable_chunks(static_cast<int>(piece)) = sha.HexDigest();
    return Status::Ok();
  }

  // One MissingBlobs question (in slices only for huge trees), the pieces
  // the store lacks, and the manifest last: a stored manifest means a
  // complete tree.
  Status Send() {
    const int64_t chunk = options_.chunk_bytes;
    Manifest manifest;
    manifest.set_chunk_bytes(chunk);
    struct Piece {
      const ScannedEntry* item;
      int64_t index;
    };
    std::map<std::string, Piece> first;  // id -> where its bytes are
    std::vector<std::string> ids;
    for (const auto& [path, item] : scan_.entries) {
      *manifest.add_entries() = item.entry;
      for (int j = 0; j < item.entry.chunks_size(); ++j) {
        if (first.emplace(item.entry.chunks(j), Piece{&item, j}).second) ids.push_back(item.entry.chunks(j));
      }
    }
    std::string bytes = manifest.SerializeAsString();
    result_.manifest_id = Sha256Hex(bytes);
    ids.push_back(result_.manifest_id);
    std::vector<std::string> lacking;
    for (size_t at = 0; at < ids.size(); at += kIdsPerCall) {
      std::vector<std::string> slice(ids.begin() + static_cast<long>(at),
                                     ids.begin() + static_cast<long>(std::min(ids.size(), at + kIdsPerCall)));
      auto missing = store_.Missing(slice);
      if (!missing.ok()) return missing.status();
      lacking.insert(lacking.end(), missing->begin(), missing->end());
    }
    bool send_manifest = !lacking.empty() && lacking.back() == result_.manifest_id;
    if (send_manifest) lacking.pop_back();
    for (const std::string& id : lacking) {
      auto it = first.find(id);
      if (it == first.end()) return Status::Internal(fmt::format("the store lacks {}, which was not asked", id));
      result_.sent_bytes += PieceBytes(it->second.item->entry, it->second.index);
    }
    std::mutex progress_mutex;
    int64_t done = 0;
    RETURN_IF_ERROR(RunTasks(options_.parallel, lacking.size(), [&](size_t i) {
      const Piece& piece = first.at(lacking[i]);
      const std::string& rel = piece.item->entry.path();
      int64_t last = 0;
      auto progress = [&](int64_t sent, int64_t) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        done += sent - last;
        last = sent;
        if (options_.progress) options_.progress(done, result_.sent_bytes);
      };
      Status sent = store_.UploadRange(lacking[i], Full(rel), piece.index * chunk,
                                       PieceBytes(piece.item->entry, piece.index), progress);
      struct stat st;
      if (lstat(Full(rel).c_str(), &st) != 0 || !SameBytes(StampOfStat(st), piece.item->stamp)) return Changed(rel);
      return sent;
    }));
    return send_manifest ? store_.UploadData(result_.manifest_id, bytes) : Status::Ok();
  }

  int64_t PieceBytes(const ManifestEntry& e, int64_t index) const {
    return std::min(options_.chunk_bytes, e.size() - index * options_.chunk_bytes);
  }

  BlobStorage& store_;
  std::string root_;
  TreeUploadOptions options_;  // a copy: chunk_bytes is settled here
  ScannedPaths scan_;
  UploadedTree result_;
  bool sending_ = false;
};

}  // namespace

bool ChangedUnderUpload(const Status& status) {
  return status.code() == Status::Code::kIOError && status.message().find(kChangedWhileUploading) != std::string::npos;
}

Result<UploadedTree> UploadTree(BlobStorage& store, const std::string& root, const std::vector<std::string>& paths,
                                const TreeUploadOptions& options) {
  Uploader uploader(store, root, options);
  auto uploaded = uploader.Run(paths);
  // The store is named only when it is in question, so that a local error
  // (a symlink out of the folder) does not read as the head's refusal.
  if (!uploaded.ok()) {
    return InContext(uploaded.status(), "uploading " + root, root, uploader.sending() ? store.where() : "");
  }
  return uploaded;
}

}  // namespace clusterd
