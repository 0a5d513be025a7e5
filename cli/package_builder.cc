#include "cli/package_builder.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "cli/content_hasher.h"
#include "common/file_util.h"
#include "common/sha256.h"

namespace clusterd {
namespace {

constexpr size_t kBufferBytes = 1 << 20;
// Files up to this size are hashed on the packing thread (ContentHasher).
constexpr uint64_t kHashHereBytes = 256 << 10;
constexpr size_t kHasherBuffers = 4;

// libarchive hands the archive bytes here: they go to the sink and into the
// id's hash in one pass.
struct Sink {
  const ArchiveSink* out = nullptr;
  Sha256 sha;
  uint64_t bytes = 0;
  Status failed;
};

la_ssize_t WriteToSink(archive* a, void* data, const void* buffer, size_t size) {
  auto* sink = static_cast<Sink*>(data);
  sink->sha.Update(buffer, size);
  sink->failed = (*sink->out)(static_cast<const char*>(buffer), size);
  if (!sink->failed.ok()) {
    archive_set_error(a, EIO, "%s", sink->failed.message().c_str());
    return -1;
  }
  sink->bytes += size;
  return static_cast<la_ssize_t>(size);
}


Status WriteAll(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

std::string Changed(const std::string& root, const TreeEntry& e) {
  return fmt::format("working_dir {}: {} changed while it was being packed; submit again", root, e.path);
}

Status ReadError(const std::string& root, const TreeEntry& e, int err) {
  return Status::IOError(fmt::format("working_dir {}: cannot read file {}: {}", root, e.path, std::strerror(err)));
}

// Streams one file through `consume` in kBufferBytes pieces, and fails if it
// no longer matches its scan (size or times), as its bytes would not.
template <typename Consume>
Status ReadFile(const std::string& root, const TreeEntry& e, std::vector<char>* buffer, Consume consume) {
  UniqueFd file{open((root + "/" + e.path).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)};
  const int fd = file.get();
  if (fd < 0) return ReadError(root, e, errno);
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buffer->data(), buffer->size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ReadError(root, e, errno);
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > e.size) return Status::FailedPrecondition(Changed(root, e));
    RETURN_IF_ERROR(consume(buffer->data(), static_cast<size_t>(n)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) return ReadError(root, e, errno);
  FileStamp now{static_cast<uint64_t>(st.st_size), int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec, st.st_ino};
  if (total != e.size || !(now == StampOf(e))) return Status::FailedPrecondition(Changed(root, e));
  return Status::Ok();
}

// A folder's mtime in the package: the newest of what it holds there.
std::map<std::string, int64_t> FolderTimes(const ScannedTree& tree) {
  std::map<std::string, int64_t> times;
  for (const auto& e : tree.entries) {
    if (e.type == EntryType::kDir) times.emplace(e.path, 0);
    int64_t seconds = e.type == EntryType::kDir ? 0 : e.mtime_ns / 1000000000;
    for (size_t slash = e.path.rfind('/'); slash != std::string::npos && slash > 0;
         slash = e.path.rfind('/', slash - 1)) {
      int64_t& t = times[e.path.substr(0, slash)];
      t = std::max(t, seconds);
    }
  }
  return times;
}

// Records every file's hash and saves; a cache that cannot be saved costs
// only speed next time.
void Remember(ScannedTree* tree, HashCache* cache) {
  for (const auto& e : tree->entries) {
    if (e.type == EntryType::kFile) cache->Put(e.path, StampOf(e), e.sha256);
  }
  Status saved = cache->Save();
  if (!saved.ok()) tree->warnings.push_back("hash cache: " + saved.message());
}

}  // namespace

FileStamp StampOf(const TreeEntry& file) { return FileStamp{file.size, file.mtime_ns, file.ctime_ns, file.ino}; }

uint64_t HashesFromCache(ScannedTree* tree, HashCache* cache) {
  uint64_t missing = 0;
  for (auto& e : tree->entries) {
    if (e.type != EntryType::kFile || !e.sha256.empty()) continue;
    if (auto sha = cache->Lookup(e.path, StampOf(e))) {
      e.sha256 = std::move(*sha);
    } else {
      missing += e.size;
    }
  }
  return missing;
}

Status HashRemaining(ScannedTree* tree) {
  std::vector<char> buffer(kBufferBytes);
  for (auto& e : tree->entries) {
    if (e.type != EntryType::kFile || !e.sha256.empty()) continue;
    Sha256 sha;
    RETURN_IF_ERROR(ReadFile(tree->root, e, &buffer, [&](const char* p, size_t n) {
      sha.Update(p, n);
      return Status::Ok();
    }));
    e.sha256 = sha.HexDigest();
  }
  return Status::Ok();
}

std::string ManifestHash(const ScannedTree& tree) {
  // NUL cannot occur in a path or a link target, so it separates fields
  // without ambiguity.
  Sha256 sha;
  sha.Update("clusterd-manifest-1\n");
  for (const auto& e : tree.entries) {
    const char type = e.type == EntryType::kFile ? 'f' : e.type == EntryType::kDir ? 'd' : 'l';
    const std::string& content = e.type == EntryType::kFile ? e.sha256 : e.link_target;
    std::string line = fmt::format("{}{}{:o}{}{}{}", type, '\0', e.mode, '\0', e.size, '\0');
    line += content + '\0' + e.path + '\n';
    sha.Update(line);
  }
  return sha.HexDigest();
}

Result<BuiltPackage> BuildPackage(ScannedTree* tree, const ArchiveSink& out, const ProgressFn& progress) {
  Sink sink;
  sink.out = &out;
  std::unique_ptr<archive, decltype(&archive_write_free)> a(archive_write_new(), archive_write_free);
  BuiltPackage built;
  auto archive_error = [&](const std::string& what) {
    // The sink's own error says it best (the head refused, a disk is full).
    if (!sink.failed.ok()) return sink.failed;
    return Status::IOError(
        fmt::format("packing working_dir {}: {}: {}", tree->root, what, archive_error_string(a.get())));
  };
  archive_write_set_format_pax_restricted(a.get());
  // Pad nothing after the end-of-archive blocks; write 1 MiB at a time.
  archive_write_set_bytes_per_block(a.get(), kBufferBytes);
  archive_write_set_bytes_in_last_block(a.get(), 1);
  if (archive_write_open2(a.get(), &sink, nullptr, WriteToSink, nullptr, nullptr) != ARCHIVE_OK) {
    return archive_error("open");
  }

  const std::map<std::string, int64_t> folder_times = FolderTimes(*tree);
  std::vector<char> buffer(kBufferBytes);
  ContentHasher hasher(kHasherBuffers, kBufferBytes);
  auto last_report = std::chrono::steady_clock::now();
  auto report = [&](bool final) {
    auto now = std::chrono::steady_clock::now();
    if (!progress || (!final && now - last_report < std::chrono::milliseconds(100))) return;
    last_report = now;
    progress(built.bytes, tree->file_bytes, built.files, tree->file_count);
  };
  std::unique_ptr<archive_entry, decltype(&archive_entry_free)> entry(archive_entry_new2(a.get()),
                                                                       archive_entry_free);
  for (auto& e : tree->entries) {
    archive_entry_clear(entry.get());
    archive_entry_set_pathname(entry.get(), e.path.c_str());
    archive_entry_set_perm(entry.get(), e.mode & 0777);
    if (e.type == EntryType::kDir) {
      archive_entry_set_filetype(entry.get(), AE_IFDIR);
      archive_entry_set_mtime(entry.get(), folder_times.at(e.path), 0);
    } else {
      archive_entry_set_filetype(entry.get(), e.type == EntryType::kFile ? AE_IFREG : AE_IFLNK);
      archive_entry_set_mtime(entry.get(), e.mtime_ns / 1000000000, 0);
    }
    if (e.type == EntryType::kSymlink) archive_entry_set_symlink(entry.get(), e.link_target.c_str());
    if (e.type == EntryType::kFile) archive_entry_set_size(entry.get(), static_cast<la_int64_t>(e.size));
    // ARCHIVE_WARN: a name not in the locale's charset, stored as raw bytes.
    if (archive_write_header(a.get(), entry.get()) < ARCHIVE_WARN) return archive_error(e.path);
    if (e.type != EntryType::kFile) continue;
    // A large file's content is hashed on the hasher's thread, from the
    // buffer it was read into; a small one here, cheaper than handing it over.
    const bool hash_here = e.sha256.empty() && e.size <= kHashHereBytes;
    const bool hand_over = e.sha256.empty() && !hash_here;
    Sha256 content;
    Status read = ReadFile(tree->root, e, &buffer, [&](const char* p, size_t n) {
      if (archive_write_data(a.get(), p, n) != static_cast<la_ssize_t>(n)) return archive_error(e.path);
      if (hash_here) content.Update(p, n);
      if (hand_over) hasher.Add(&e, &buffer, n);  // swaps in a free buffer for the next read
      built.bytes += n;
      report(false);
      return Status::Ok();
    });
    if (!read.ok()) return read;
    if (hash_here) e.sha256 = content.HexDigest();
    if (hand_over) hasher.End(&e);
    ++built.files;
    report(false);
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) return archive_error("close");
  hasher.Wait();
  report(true);
  built.id = sink.sha.HexDigest();
  built.size = sink.bytes;
  return built;
}

Result<BuiltPackage> BuildPackage(ScannedTree* tree, const std::string& out_path, const ProgressFn& progress) {
  std::string temp = fmt::format("{}.tmp.{}", out_path, getpid());
  UniqueFd file{open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
  if (file.get() < 0) return Status::IOError(fmt::format("cannot write {}: {}", temp, std::strerror(errno)));
  auto built = BuildPackage(
      tree, [&](const char* data, size_t size) { return WriteAll(file.get(), data, size, temp); }, progress);
  int closed = close(file.Release());
  if (built.ok() && (closed != 0 || rename(temp.c_str(), out_path.c_str()) != 0)) {
    built = Status::IOError(fmt::format("cannot write {}: {}", out_path, std::strerror(errno)));
  }
  if (!built.ok()) unlink(temp.c_str());
  return built;
}

OpenSinkFn PackageFile(const std::string& path) {
  return [path](uint64_t) -> Result<ArchiveSink> {
    auto file = std::make_shared<UniqueFd>(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!file->ok()) return Status::IOError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    return ArchiveSink([file, path](const char* data, size_t size) { return WriteAll(file->get(), data, size, path); });
  };
}

uint64_t PackageSizeHint(const ScannedTree& tree) {
  // A header block, a pax header and its block for a long name, the last
  // data block's padding; two zero blocks at the end.
  uint64_t bytes = tree.file_bytes + 1024;
  for (const auto& e : tree.entries) bytes += 3 * 512 + e.path.size() + e.link_target.size();
  return bytes;
}

Result<PreparedPackage> PrepareWorkingDir(const std::string& root, const ScanOptions& options, HashCache* cache,
                                          const OpenSinkFn& open_sink, bool reuse_cached_id,
                                          const ProgressFn& progress) {
  PreparedPackage prepared;
  ASSIGN_OR_RETURN(prepared.tree, ScanWorkingDir(root, options));
  ScannedTree& tree = prepared.tree;
  uint64_t missing = HashesFromCache(&tree, cache);
  // When little is unknown, hashing it first may find the id in the cache
  // and save the packing; when much is, packing hashes it in the same read.
  if (reuse_cached_id && missing <= tree.file_bytes / 4) {
    RETURN_IF_ERROR(HashRemaining(&tree));
    prepared.manifest = ManifestHash(tree);
    if (auto cached = cache->LookupPackage(prepared.manifest)) {
      prepared.id = cached->id;
      prepared.size = cached->size;
      Remember(&tree, cache);
      return prepared;
    }
  }
  ASSIGN_OR_RETURN(ArchiveSink sink, open_sink(PackageSizeHint(tree)));
  ASSIGN_OR_RETURN(BuiltPackage built, BuildPackage(&tree, sink, progress));
  prepared.id = built.id;
  prepared.size = built.size;
  prepared.manifest = ManifestHash(tree);
  prepared.built = true;
  cache->PutPackage(prepared.manifest, CachedPackage{built.id, built.size});
  Remember(&tree, cache);
  return prepared;
}

}  // namespace clusterd
