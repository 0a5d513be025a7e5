#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>

#include "cli/package_builder.h"
#include "common/storage/hash_cache.h"
#include "common/storage/tar_package.h"
#include "temp_tree.h"

using namespace clusterd;
using clusterd::testing::TempTree;
namespace fs = std::filesystem;

namespace {

// Everything under `root` as "path -> kind mode content-or-target".
std::map<std::string, std::string> Describe(const std::string& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    std::string rel = it->path().lexically_relative(root).string();  // fs::relative would follow links
    struct stat st;
    REQUIRE(lstat(it->path().c_str(), &st) == 0);
    char mode[8];
    snprintf(mode, sizeof mode, "%o", st.st_mode & 07777);
    if (S_ISLNK(st.st_mode)) {
      out[rel] = std::string("link -> ") + fs::read_symlink(it->path()).string();
    } else if (S_ISDIR(st.st_mode)) {
      out[rel] = std::string("dir ") + mode;
    } else {
      std::ifstream in(it->path(), std::ios::binary);
      out[rel] = std::string("file ") + mode + " " +
                 std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a working_dir survives scan, pack and extract", "[package][roundtrip]") {
  TempTree src, work;
  src.Write("run.sh", "#!/bin/sh\necho hi\n", 0755);
  src.Write("pkg/model.py", "W = 1\n");
  src.Write("pkg/sub/deep/data.csv", "a,b\n1,2\n", 0600);
  src.Mkdir("pkg/empty", 0750);
  src.Symlink("pkg/current", "sub/deep/data.csv");
  src.Symlink("pkg/sub/abs", src.Path("run.sh"));  // absolute, inside: rewritten
  src.Write(".clusterignore", "*.log\nbuild/\n!keep.log\n");
  src.Write("debug.log", "noise");
  src.Write("pkg/sub/trace.log", "noise");
  src.Write("keep.log", "wanted");
  src.Write("build/obj.o", "binary");
  src.Write(".git/HEAD", "ref: refs/heads/main\n");
  src.Write("caf\xc3\xa9 notes.txt", "non-ASCII name");
  const std::string long_path = "pkg/" + std::string(120, 'n') + "/" + std::string(130, 'm') + ".py";
  src.Write(long_path, "past ustar's 100-byte name field\n");  // a pax header

  HashCache cache = HashCache::Load(work.Path("hashes"), src.root());
  auto prepared = PrepareWorkingDir(src.root(), {}, &cache, PackageFile(work.Path("p.tar")));
  REQUIRE(prepared.ok());
  work.Mkdir("nodes/n1");
  Status extracted = ExtractPackage(work.Path("p.tar"), work.Path("nodes/n1/" + prepared->id));
  INFO(extracted.message());
  REQUIRE(extracted.ok());
  std::string dest = work.Path("nodes/n1/" + prepared->id);

  std::map<std::string, std::string> want = {
      {".clusterignore", "file 644 *.log\nbuild/\n!keep.log\n"},
      {"caf\xc3\xa9 notes.txt", "file 644 non-ASCII name"},
      {"keep.log", "file 644 wanted"},
      {"pkg", "dir 755"},
      {"pkg/current", "link -> sub/deep/data.csv"},
      {"pkg/empty", "dir 750"},
      {"pkg/" + std::string(120, 'n'), "dir 755"},
      {long_path, "file 644 past ustar's 100-byte name field\n"},
      {"pkg/model.py", "file 644 W = 1\n"},
      {"pkg/sub", "dir 755"},
      {"pkg/sub/abs", "link -> ../../run.sh"},
      {"pkg/sub/deep", "dir 755"},
      {"pkg/sub/deep/data.csv", "file 600 a,b\n1,2\n"},
      {"run.sh", "file 755 #!/bin/sh\necho hi\n"},
  };
  CHECK(Describe(dest) == want);
  // The rewritten link works where the package landed.
  CHECK(fs::equivalent(dest + "/pkg/sub/abs", dest + "/run.sh"));
  // mtimes survive (in whole seconds).
  struct stat a, b;
  REQUIRE(stat(src.Path("pkg/model.py").c_str(), &a) == 0);
  REQUIRE(stat((dest + "/pkg/model.py").c_str(), &b) == 0);
  CHECK(a.st_mtime == b.st_mtime);

  // Pax headers (long and non-ASCII names) are deterministic too.
  auto again = PrepareWorkingDir(src.root(), {}, &cache, PackageFile(work.Path("again.tar")), /*reuse_cached_id=*/false);
  REQUIRE(again.ok());
  CHECK(again->id == prepared->id);
}
