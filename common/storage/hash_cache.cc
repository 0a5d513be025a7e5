#include "common/storage/hash_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <type_traits>

#include <fmt/format.h>

#include "common/sha256.h"

namespace clusterd {
namespace {

constexpr char kMagic[] = "clusterd-hash-cache 1";
constexpr size_t kMaxPackages = 16;

int64_t Nanos(const timespec& t) { return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

// The kernel stamps files from the coarse clock; reading the same clock makes
// "changed no earlier than now" exact rather than off by a tick.
int64_t CoarseNow() {
  timespec t;
  clock_gettime(CLOCK_REALTIME_COARSE, &t);
  return Nanos(t);
}

// Paths may hold any byte but NUL; one entry per line needs '\n' escaped.
std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

bool Unescape(std::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      *out += s[i];
      continue;
    }
    if (++i == s.size()) return false;
    if (s[i] == '\\') *out += '\\';
    else if (s[i] == 'n') *out += '\n';
    else return false;
  }
  return true;
}

// Splits off the first space-separated field of *rest.
std::string_view Field(std::string_view* rest) {
  size_t space = rest->find(' ');
  std::string_view field = rest->substr(0, space);
  rest->remove_prefix(space == std::string_view::npos ? rest->size() : space + 1);
  return field;
}

template <typename T>
bool Number(std::string_view text, T* out) {
  if (text.empty() || text.size() > 20) return false;
  std::string s(text);
  char* end = nullptr;
  errno = 0;
  *out = std::is_signed<T>::value ? static_cast<T>(std::strtoll(s.c_str(), &end, 10))
                                  : static_cast<T>(std::strtoull(s.c_str(), &end, 10));
  return errno == 0 && end == s.c_str() + s.size();
}

bool IsHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(c) != 0; });
}

int64_t Newest(const FileStamp& s) { return std::max(s.mtime_ns, s.ctime_ns); }

// A folder only we can write to, made (0700) with its parents if missing.
Status PrivateDir(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string part = dir.substr(0, slash);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::IOError(fmt::format("cannot make {}: {}", part, std::strerror(errno)));
    }
    if (slash == std::string::npos) break;
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    return Status::FailedPrecondition(dir + " is not a folder of ours; not caching hashes");
  }
  if ((st.st_mode & 077) != 0 && chmod(dir.c_str(), 0700) != 0) {
    return Status::IOError(fmt::format("cannot make {} private: {}", dir, std::strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace

std::string DefaultHashCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/clusterd/hashes";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/clusterd/hashes";
  return "";
}

namespace {
std::string CacheFileOf(const std::string& dir, const std::string& root) {
  return dir + "/" + Sha256Hex(root).substr(0, 32);
}
}  // namespace

void HashCache::Discard(const std::string& dir, const std::string& root) {
  if (!dir.empty()) unlink(CacheFileOf(dir, root).c_str());
}

HashCache HashCache::Load(const std::string& dir, const std::string& root) {
  HashCache cache;
  cache.root_ = root;
  cache.start_ns_ = CoarseNow();
  if (dir.empty()) return cache;
  cache.dir_ = dir;
  cache.file_ = CacheFileOf(dir, root);
  int fd = open(cache.file_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) cache.note_ = fmt::format("{}: {}", cache.file_, std::strerror(errno));
    return cache;
  }
  struct stat st;
  std::string text;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    cache.note_ = cache.file_ + " is not a private file of ours; ignored";
  } else {
    text.resize(static_cast<size_t>(st.st_size));
    if (read(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) text.clear();
    cache.written_ns_ = Nanos(st.st_mtim);
    if (!cache.Parse(text)) {
      cache.entries_.clear();
      cache.packages_.clear();
      cache.note_ = cache.file_ + " is damaged or not for " + root + "; ignored";
    }
  }
  close(fd);
  return cache;
}

bool HashCache::Parse(const std::string& text) {
  // The last line carries the hash of all before it: a torn or edited file
  // is dropped whole.
  size_t end_line = text.rfind("\nend ");
  if (end_line == std::string::npos || text.back() != '\n') return false;
  std::string_view trailer(text.data() + end_line + 5, text.size() - end_line - 6);
  if (trailer != Sha256Hex(std::string_view(text.data(), end_line + 1))) return false;
  std::string_view body(text.data(), end_line + 1);
  std::string expected = fmt::format("{}\nroot {}\n", kMagic, Escape(root_));
  if (body.substr(0, expected.size()) != expected) return false;
  body.remove_prefix(expected.size());
  while (!body.empty()) {
    size_t newline = body.find('\n');
    std::string_view line = body.substr(0, newline);
    body.remove_prefix(newline + 1);
    std::string_view kind = Field(&line);
    if (kind == "f") {
      Entry e;
      std::string path;
      if (!Number(Field(&line), &e.stamp.size) || !Number(Field(&line), &e.stamp.mtime_ns) ||
          !Number(Field(&line), &e.stamp.ctime_ns) || !Number(Field(&line), &e.stamp.ino)) {
        return false;
      }
      e.sha256 = std::string(Field(&line));
      if (!IsHex64(e.sha256) || !Unescape(line, &path)) return false;
      e.trusted = Newest(e.stamp) < written_ns_;
      entries_[path] = std::move(e);
    } else if (kind == "p") {
      std::string manifest(Field(&line));
      CachedPackage package;
      package.id = std::string(Field(&line));
      if (!IsHex64(manifest) || !IsHex64(package.id) || !Number(line, &package.size)) return false;
      packages_.emplace_back(std::move(manifest), std::move(package));
    } else {
      return false;
    }
  }
  return true;
}

std::optional<std::string> HashCache::Lookup(const std::string& path, const FileStamp& stamp) {
  auto it = entries_.find(path);
  if (it == entries_.end() || !it->second.trusted || !(it->second.stamp == stamp)) return std::nullopt;
  it->second.in_use = true;
  return it->second.sha256;
}

void HashCache::Put(const std::string& path, const FileStamp& stamp, const std::string& sha256) {
  Entry& e = entries_[path];
  if (e.trusted && e.in_use && e.stamp == stamp && e.sha256 == sha256) return;
  e = Entry{stamp, sha256, true, true};
  dirty_ = true;
}

std::optional<CachedPackage> HashCache::LookupPackage(const std::string& manifest) const {
  for (const auto& [m, package] : packages_) {
    if (m == manifest) return package;
  }
  return std::nullopt;
}

void HashCache::PutPackage(const std::string& manifest, const CachedPackage& package) {
  packages_.erase(std::remove_if(packages_.begin(), packages_.end(), [&](const auto& p) { return p.first == manifest; }),
                  packages_.end());
  packages_.insert(packages_.begin(), {manifest, package});
  if (packages_.size() > kMaxPackages) packages_.resize(kMaxPackages);
  dirty_ = true;
}

std::string HashCache::Serialize() const {
  std::string text = fmt::format("{}\nroot {}\n", kMagic, Escape(root_));
  for (const auto& [path, e] : entries_) {
    // Racy entries are not kept: a change in this clock tick could hide.
    if (!e.in_use || Newest(e.stamp) >= start_ns_) continue;
    text += fmt::format("f {} {} {} {} {} {}\n", e.stamp.size, e.stamp.mtime_ns, e.stamp.ctime_ns, e.stamp.ino,
                        e.sha256, Escape(path));
  }
  for (const auto& [manifest, package] : packages_) {
    text += fmt::format("p {} {} {}\n", manifest, package.id, package.size);
  }
  return text + "end " + Sha256Hex(text) + "\n";
}

Status HashCache::Save() {
  if (file_.empty() || !dirty_) return Status::Ok();
  RETURN_IF_ERROR(PrivateDir(dir_));
  std::string temp = fmt::format("{}.tmp.{}", file_, getpid());
  std::string text = Serialize();
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError(fmt::format("cannot write {}: {}", temp, std::strerror(errno)));
  // No fsync: a file torn by a crash fails its checksum and is ignored.
  bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int err = errno;
  if (close(fd) != 0 || !written || rename(temp.c_str(), file_.c_str()) != 0) {
    if (written) err = errno;
    unlink(temp.c_str());
    return Status::IOError(fmt::format("cannot write {}: {}", file_, std::strerror(err)));
  }
  dirty_ = false;
  return Status::Ok();
}

}  // namespace clusterd
