#include "daemon/agent/tree_link.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/path_parts.h"

namespace clusterd {

namespace {

char TypeLetter(EntryType type) { return type == EntryType::kDir ? 'd' : type == EntryType::kSymlink ? 'l' : 'f'; }

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

Status Walk(const std::string& root, const std::string& relative, std::vector<TreeEntry>* out) {
  std::string dir_path = relative.empty() ? root : root + "/" + relative;
  DIR* dir = opendir(dir_path.c_str());
  if (!dir) return Status::IOError(fmt::format("cannot read {}: {}", dir_path, std::strerror(errno)));
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    TreeEntry entry;
    entry.path = relative.empty() ? name : relative + "/" + name;
    std::string full = root + "/" + entry.path;
    struct stat st {};
    if (lstat(full.c_str(), &st) != 0) return Status::IOError(fmt::format("cannot stat {}: {}", full, std::strerror(errno)));
    entry.mode = st.st_mode & 07777;
    entry.mtime_ns = MtimeNs(st);
    if (S_ISDIR(st.st_mode)) {
      entry.type = EntryType::kDir;
      out->push_back(entry);
      RETURN_IF_ERROR(Walk(root, entry.path, out));
    } else if (S_ISLNK(st.st_mode)) {
      entry.type = EntryType::kSymlink;
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = readlink(full.c_str(), target.data(), target.size());
      if (n < 0) return Status::IOError(fmt::format("cannot read link {}: {}", full, std::strerror(errno)));
      target.resize(static_cast<size_t>(n));
      entry.link_target = target;
      out->push_back(entry);
    } else if (S_ISREG(st.st_mode)) {
      entry.size = static_cast<uint64_t>(st.st_size);
      out->push_back(entry);
    }
  }
  return Status::Ok();
}

// Paths may hold any byte but NUL: escape the separators.
std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '%' || c == '\t' || c == '\n') out += fmt::format("%{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string Unescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    int high = i + 2 < text.size() && text[i] == '%' ? HexDigit(text[i + 1]) : -1;
    int low = high >= 0 ? HexDigit(text[i + 2]) : -1;
    if (low >= 0) {
      out += static_cast<char>(high * 16 + low);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

Status CopyFile(const std::string& from, const std::string& to, mode_t mode) {
  int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Status::IOError(fmt::format("cannot open {}: {}", from, std::strerror(errno)));
  int out = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (out < 0) {
    close(in);
    return Status::IOError(fmt::format("cannot create {}: {}", to, std::strerror(errno)));
  }
  Status result = Status::Ok();
  while (true) {
    ssize_t n = copy_file_range(in, nullptr, out, nullptr, 1 << 30, 0);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result = Status::IOError(fmt::format("cannot copy {} to {}: {}", from, to, std::strerror(errno)));
      break;
    }
  }
  close(in);
  close(out);
  return result;
}

}  // namespace

Result<std::vector<TreeEntry>> IndexTree(const std::string& root) {
  std::vector<TreeEntry> entries;
  RETURN_IF_ERROR(Walk(root, "", &entries));
  return entries;
}

Status SaveTreeIndex(const std::string& path, const std::vector<TreeEntry>& entries) {
  std::string text;
  for (const TreeEntry& e : entries) {
    text += fmt::format("{}\t{:o}\t{}\t{}\t{}\t{}\n", TypeLetter(e.type), e.mode, e.size, e.mtime_ns,
                        Escape(e.path), Escape(e.link_target));
  }
  return WriteFileAtomic(path, text, 0600);
}

Result<std::vector<TreeEntry>> LoadTreeIndex(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(fmt::format("no index {}", path));
  std::vector<TreeEntry> entries;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream parts(line);
    std::string field;
    while (std::getline(parts, field, '\t')) fields.push_back(field);
    if (line.back() == '\t') fields.push_back("");
    if (fields.size() != 6 || fields[0].size() != 1) {
      return Status::Corruption(fmt::format("{}: line {} is not an index entry", path, entries.size() + 1));
    }
    TreeEntry e;
    e.type = fields[0][0] == 'd' ? EntryType::kDir : fields[0][0] == 'l' ? EntryType::kSymlink : EntryType::kFile;
    e.mode = static_cast<uint32_t>(std::strtoul(fields[1].c_str(), nullptr, 8));
    e.size = std::strtoull(fields[2].c_str(), nullptr, 10);
    e.mtime_ns = std::strtoll(fields[3].c_str(), nullptr, 10);
    e.path = Unescape(fields[4]);
    e.link_target = Unescape(fields[5]);
    entries.push_back(std::move(e));
  }
  return entries;
}

std::string FirstChangedEntry(const std::string& root, const std::vector<TreeEntry>& entries) {
  for (const TreeEntry& e : entries) {
    struct stat st {};
    if (lstat((root + "/" + e.path).c_str(), &st) != 0) return e.path;
    EntryType type = S_ISDIR(st.st_mode) ? EntryType::kDir : S_ISLNK(st.st_mode) ? EntryType::kSymlink : EntryType::kFile;
    if (type != e.type) return e.path;
    // A job's working folder holds hard links to these files: its writes
    // and its chmods (a failed attempt's script made read-only, which a
    // retry or the next job must not inherit) land here.
    if (type == EntryType::kFile && (static_cast<uint64_t>(st.st_size) != e.size || MtimeNs(st) != e.mtime_ns ||
                                     (st.st_mode & 07777) != e.mode)) {
      return e.path;
    }
  }
  return "";
}

namespace {

// Where `path` leads in the tree: written plainly ("a//./b" is "a/b"), and
// through the tree's own symlinks ("latest/model.pt" with latest ->
// runs/run_3 is "runs/run_3/model.pt"), as the outputs' upload follows them.
// "" is the tree's root (so `selfdir -> .` counts as inside the tree, and
// its files are copied like the rest); nullopt when it leaves the tree.
std::optional<std::string> ResolvedInTree(const std::string& path,
                                          const std::map<std::string, const TreeEntry*>& by_path) {
  std::vector<std::string> resolved;
  std::vector<std::string> left = PathParts(path);
  std::reverse(left.begin(), left.end());  // next part at the back
  for (int hops = 0; !left.empty();) {
    const std::string part = std::move(left.back());
    left.pop_back();
    if (part == "..") {
      if (resolved.empty()) return std::nullopt;
      resolved.pop_back();
      continue;
    }
    resolved.push_back(part);
    auto it = by_path.find(JoinParts(resolved));
    if (it == by_path.end() || it->second->type != EntryType::kSymlink) continue;
    const std::string& target = it->second->link_target;
    if (target.empty() || target[0] == '/' || ++hops > 40) return std::nullopt;
    resolved.pop_back();  // the link's parts replace it, from its folder
    std::vector<std::string> via = PathParts(target);
    for (auto part_it = via.rbegin(); part_it != via.rend(); ++part_it) left.push_back(*part_it);
  }
  return JoinParts(resolved);
}

// The paths of the tree whose files are to be copies: each of `outputs` as
// written plainly and where it leads through the tree's symlinks.
std::vector<std::string> CopiedPaths(const std::vector<std::string>& outputs, const std::vector<TreeEntry>& entries) {
  if (outputs.empty()) return {};
  std::map<std::string, const TreeEntry*> by_path;
  for (const TreeEntry& e : entries) by_path[e.path] = &e;
  std::vector<std::string> paths;
  for (const std::string& output : outputs) {
    paths.push_back(JoinParts(PathParts(output)));
    if (std::optional<std::string> resolved = ResolvedInTree(output, by_path)) paths.push_back(*resolved);
  }
  return paths;
}

// `path` is one of `paths` or lies under one of them (each plain: no empty
// or "." parts, no trailing slash; "" is the whole tree).
bool AtOrUnder(const std::string& path, const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    if (p.empty()) return true;
    if (path == p || (path.size() > p.size() && path.compare(0, p.size(), p) == 0 && path[p.size()] == '/')) {
      return true;
    }
  }
  return false;
}

}  // namespace

Status LinkTree(const std::string& root, const std::vector<TreeEntry>& entries, const std::string& dest,
                const std::vector<std::string>& outputs) {
  const std::vector<std::string> copied = CopiedPaths(outputs, entries);
  std::string building = fmt::format("{}.linking{}", dest, getpid());
  RETURN_IF_ERROR(RemoveTree(building));
  if (mkdir(building.c_str(), 0755) != 0) {
    return Status::IOError(fmt::format("cannot create {}: {}", building, std::strerror(errno)));
  }
  auto fail = [&](Status status) {
    RemoveTree(building);
    return status;
  };
  for (const TreeEntry& e : entries) {
    std::string from = root + "/" + e.path;
    std::string to = building + "/" + e.path;
    if (e.type == EntryType::kDir) {
      // Writable by its owner whatever the package said: a job makes files here.
      if (mkdir(to.c_str(), e.mode | 0700) != 0) {
        return fail(Status::IOError(fmt::format("cannot create {}: {}", to, std::strerror(errno))));
      }
    } else if (e.type == EntryType::kSymlink) {
      if (symlink(e.link_target.c_str(), to.c_str()) != 0) {
        return fail(Status::IOError(fmt::format("cannot create link {}: {}", to, std::strerror(errno))));
      }
    } else if (AtOrUnder(e.path, copied) || link(from.c_str(), to.c_str()) != 0) {
      // EPERM: an immutable file (a job's chattr +i), copied so that later
      // checkouts of its package still work.
      if (!AtOrUnder(e.path, copied) && errno != EXDEV && errno != EPERM) {
        return fail(Status::IOError(fmt::format("cannot link {}: {}", to, std::strerror(errno))));
      }
      Status copy = CopyFile(from, to, e.mode);
      if (!copy.ok()) return fail(copy);
    }
  }
  if (rename(building.c_str(), dest.c_str()) != 0) {
    return fail(Status::IOError(fmt::format("cannot move {} into place: {}", dest, std::strerror(errno))));
  }
  return Status::Ok();
}

}  // namespace clusterd
