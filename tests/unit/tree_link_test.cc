// The package cache's tree index and working folders of hard links.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/agent/tree_link.h"
#include "temp_dir.h"

using namespace clusterd;
namespace fs = std::filesystem;

namespace {

using clusterd::testing::TempDir;

ino_t Inode(const fs::path& p) {
  struct stat st {};
  REQUIRE(lstat(p.c_str(), &st) == 0);
  return st.st_ino;
}

// A folder of the test's own, and the tree under it that the test fills
// and indexes.
struct TreeFolder {
  TempDir dir{"tree-link-test"};
  fs::path root = dir.path / "tree";

  // Every entry under root, REQUIREd to index.
  std::vector<TreeEntry> Index() const {
    auto entries = IndexTree(root.string());
    REQUIRE(entries.ok());
    return *entries;
  }
};

}  // namespace

TEST_CASE_METHOD(TreeFolder, "a tree is indexed, saved and loaded with awkward names intact", "[package_cache]") {
  fs::create_directories(root / "sub dir");
  std::ofstream(root / "sub dir" / "tab\there%and\nnewline") << "x";
  std::ofstream(root / "run.sh") << "#!/bin/sh\necho hi\n";
  fs::permissions(root / "run.sh", fs::perms(0755));
  fs::create_symlink("run.sh", root / "link");
  const std::vector<TreeEntry> entries = Index();
  REQUIRE(entries.size() == 4);
  REQUIRE(SaveTreeIndex((dir.path / "index").string(), entries).ok());
  auto loaded = LoadTreeIndex((dir.path / "index").string());
  REQUIRE(loaded.ok());
  REQUIRE(loaded->size() == entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    CHECK((*loaded)[i].path == entries[i].path);
    CHECK((*loaded)[i].type == entries[i].type);
    CHECK((*loaded)[i].mode == entries[i].mode);
    CHECK((*loaded)[i].size == entries[i].size);
    CHECK((*loaded)[i].mtime_ns == entries[i].mtime_ns);
    CHECK((*loaded)[i].link_target == entries[i].link_target);
  }
  REQUIRE(FirstChangedEntry(root.string(), *loaded).empty());
  fs::permissions(root / "run.sh", fs::perms(0444));  // a chmod through a job's link
  REQUIRE(FirstChangedEntry(root.string(), *loaded) == "run.sh");
  fs::permissions(root / "run.sh", fs::perms(0755));
  REQUIRE(FirstChangedEntry(root.string(), *loaded).empty());
  std::ofstream(root / "run.sh", std::ios::app) << "# changed in place\n";
  REQUIRE(FirstChangedEntry(root.string(), *loaded) == "run.sh");
  fs::remove(root / "link");
  std::ofstream(root / "link") << "now a file";
  REQUIRE_FALSE(FirstChangedEntry(root.string(), *loaded).empty());
}

// Jobs of one package on a node that write model.pt in place (torch.save)
// must not write every other job's copy of it.
TEST_CASE_METHOD(TreeFolder, "a working folder's declared outputs are copies of their own", "[package_cache]") {
  fs::create_directories(root / "results" / "plots");
  fs::create_directories(root / "src");
  std::ofstream(root / "model.pt") << "old weights";
  std::ofstream(root / "model.pt.bak") << "kept";
  std::ofstream(root / "results" / "plots" / "loss.tsv") << "old";
  std::ofstream(root / "src" / "train.py") << "print('hi')\n";
  // Reached through the tree's symlinks, or written loosely: these must be
  // copies too.
  fs::create_directories(root / "runs" / "run_3");
  std::ofstream(root / "runs" / "run_3" / "model.pt") << "run 3";
  std::ofstream(root / "runs" / "run_2.pt") << "run 2";
  fs::create_symlink("runs/run_3", root / "latest");
  fs::create_directories(root / "sub");
  std::ofstream(root / "sub" / "s.txt") << "s";
  std::ofstream(root / "sub" / "t.txt") << "t";
  fs::create_symlink("../runs/run_2.pt", root / "sub" / "best.pt");
  fs::create_symlink("/etc/hostname", root / "outside");
  const std::vector<TreeEntry> entries = Index();
  fs::path work = dir.path / "work";
  REQUIRE(LinkTree(root.string(), entries, work.string(),
                   {"model.pt", "./results/", "latest", "sub/./s.txt", "sub//best.pt", "outside"})
              .ok());
  CHECK(Inode(work / "runs" / "run_3" / "model.pt") != Inode(root / "runs" / "run_3" / "model.pt"));
  CHECK(Inode(work / "sub" / "s.txt") != Inode(root / "sub" / "s.txt"));
  CHECK(Inode(work / "runs" / "run_2.pt") != Inode(root / "runs" / "run_2.pt"));
  CHECK(Inode(work / "sub" / "t.txt") == Inode(root / "sub" / "t.txt"));
  CHECK(fs::is_symlink(work / "latest"));
  CHECK(Inode(work / "model.pt") != Inode(root / "model.pt"));
  // A link to the folder itself makes the whole folder the output.
  fs::create_symlink(".", root / "selfdir");
  const std::vector<TreeEntry> with_self = Index();
  fs::path whole = dir.path / "whole";
  REQUIRE(LinkTree(root.string(), with_self, whole.string(), {"selfdir"}).ok());
  CHECK(Inode(whole / "src" / "train.py") != Inode(root / "src" / "train.py"));
  CHECK(Inode(whole / "model.pt.bak") != Inode(root / "model.pt.bak"));
  CHECK(Inode(work / "results" / "plots" / "loss.tsv") != Inode(root / "results" / "plots" / "loss.tsv"));
  CHECK(Inode(work / "model.pt.bak") == Inode(root / "model.pt.bak"));
  CHECK(Inode(work / "src" / "train.py") == Inode(root / "src" / "train.py"));
  std::ofstream(work / "model.pt", std::ios::trunc) << "new weights";  // in place, as torch.save
  std::ifstream cached(root / "model.pt");
  CHECK(std::string(std::istreambuf_iterator<char>(cached), {}) == "old weights");
}

TEST_CASE_METHOD(TreeFolder,
                 "a working folder links every file, keeps modes and symlinks, and is private above the files",
                 "[package_cache]") {
  fs::create_directories(root / "src");
  std::ofstream(root / "src" / "train.py") << "print('hi')\n";
  std::ofstream(root / "run.sh") << "#!/bin/sh\n";
  fs::permissions(root / "run.sh", fs::perms(0755));
  fs::create_symlink("src/train.py", root / "main.py");
  const std::vector<TreeEntry> entries = Index();
  fs::path work = dir.path / "work" ;
  REQUIRE(LinkTree(root.string(), entries, work.string()).ok());
  REQUIRE(Inode(work / "src" / "train.py") == Inode(root / "src" / "train.py"));
  REQUIRE((fs::status(work / "run.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  REQUIRE(fs::is_symlink(work / "main.py"));
  REQUIRE(fs::read_symlink(work / "main.py") == "src/train.py");
  // New files of the job stay in its folder.
  std::ofstream(work / "src" / "model.pt") << "weights";
  REQUIRE_FALSE(fs::exists(root / "src" / "model.pt"));
  // The folder must not exist yet; nothing half-made is left on failure.
  REQUIRE_FALSE(LinkTree(root.string(), entries, work.string()).ok());
  for (const auto& e : fs::directory_iterator(dir.path)) {
    REQUIRE(e.path().filename().string().find(".linking") == std::string::npos);
  }
}
