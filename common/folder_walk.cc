#include "common/folder_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "common/file_util.h"
#include "common/path_parts.h"

namespace clusterd {

Status WalkFolder(const std::string& root, const std::string& rel, FolderVisitor* visitor) {
  const std::string path = rel.empty() ? root : root + "/" + rel;
  // The root may be reached through a symlink; nothing below it is.
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (rel.empty() ? 0 : O_NOFOLLOW)));
  if (!fd.ok()) return visitor->Unreadable(rel, errno);
  RETURN_IF_ERROR(visitor->OnFolder(fd.get(), rel));
  DIR* dir = fdopendir(fd.get());
  if (dir == nullptr) return visitor->Unreadable(rel, errno);
  const int dir_fd = fd.Release();  // closedir closes it
  std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, closedir);
  std::vector<std::string> subfolders;
  errno = 0;
  while (dirent* d = readdir(dir)) {
    const std::string name = d->d_name;
    if (name == "." || name == "..") continue;
    const std::string child = rel.empty() ? name : rel + "/" + name;
    bool enter = false;
    RETURN_IF_ERROR(visitor->OnName(dir_fd, name, child, &enter));
    if (enter) subfolders.push_back(child);
    errno = 0;
  }
  if (errno != 0) return visitor->Unreadable(rel, errno);
  closer.reset();
  for (const std::string& sub : subfolders) RETURN_IF_ERROR(WalkFolder(root, sub, visitor));
  return Status::Ok();
}

std::vector<std::string> LexicalParts(const std::string& absolute) {
  std::vector<std::string> out;
  for (auto& part : PathParts(absolute)) {
    if (part != "..") out.push_back(std::move(part));
    else if (!out.empty()) out.pop_back();
  }
  return out;
}

std::optional<std::string> RelativeTargetInside(const std::string& link, const std::string& target,
                                                const std::vector<const std::vector<std::string>*>& roots) {
  const std::vector<std::string> to = LexicalParts(target);
  for (const auto* root : roots) {
    if (to.size() < root->size() || !std::equal(root->begin(), root->end(), to.begin())) continue;
    const std::vector<std::string> inside(to.begin() + static_cast<long>(root->size()), to.end());
    std::vector<std::string> from = PathParts(link);
    if (!from.empty()) from.pop_back();  // the link's folder
    size_t common = 0;
    while (common < from.size() && common < inside.size() && from[common] == inside[common]) ++common;
    std::string out;
    for (size_t i = common; i < from.size(); ++i) out += out.empty() ? ".." : "/..";
    const std::string down = JoinParts(inside, common, inside.size());
    if (!down.empty()) out += (out.empty() ? "" : "/") + down;
    return out.empty() ? "." : out;
  }
  return std::nullopt;
}

const char* SpecialFileKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device file";
  return "not a file, folder or symlink";
}

}  // namespace clusterd
