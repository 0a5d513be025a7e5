// The GPU probe runs whatever nvidia-smi it finds: a script stands in for it.
#include "daemon/agent/resource_probe.h"

#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "temp_tree.h"

namespace clusterd {
namespace {

// Sets PATH for one scope and puts the old one back.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& path) {
    if (const char* old = std::getenv("PATH")) old_ = old;
    setenv("PATH", path.c_str(), 1);
  }
  ~ScopedPath() { setenv("PATH", old_.c_str(), 1); }

 private:
  std::string old_;
};

TEST_CASE("the GPU probe asks the nvidia-smi on PATH and reads its index lines", "[resources]") {
  testing::TempTree tree;
  // Answers only the query the probe sends, as the real one would.
  tree.Write("bin/nvidia-smi",
             "#!/bin/sh\n"
             "[ \"$*\" = '--query-gpu=index --format=csv,noheader' ] || exit 3\n"
             "printf '0\\n1\\n3\\n'\n",
             0755);
  ScopedPath path(tree.Path("bin") + ":/usr/bin:/bin");
  CHECK(FindNvidiaSmi() == tree.Path("bin/nvidia-smi"));
  CHECK(NvidiaGpuIndexes() == std::vector<int>{0, 1, 3});

  // One that fails or prints no numbers means no GPUs, not an error.
  tree.Write("bin/nvidia-smi", "#!/bin/sh\necho 'NVIDIA-SMI has failed'\nexit 9\n", 0755);
  CHECK(NvidiaGpuIndexes().empty());
}

TEST_CASE("the GPU probe takes the first nvidia-smi on PATH and skips relative entries", "[resources]") {
  testing::TempTree tree;
  tree.Write("first/nvidia-smi", "#!/bin/sh\necho 0\n", 0755);
  tree.Write("second/nvidia-smi", "#!/bin/sh\necho 1\n", 0755);
  tree.Write("second/not-executable/nvidia-smi", "", 0644);
  {
    ScopedPath path(tree.Path("second/not-executable") + ":" + tree.Path("first") + ":" + tree.Path("second"));
    CHECK(FindNvidiaSmi() == tree.Path("first/nvidia-smi"));
    CHECK(NvidiaGpuIndexes() == std::vector<int>{0});
  }
  // A relative entry would depend on the daemon's working folder.
  REQUIRE(chdir(tree.root().c_str()) == 0);
  ScopedPath relative("second:" + tree.Path("first"));
  CHECK(FindNvidiaSmi() == tree.Path("first/nvidia-smi"));
  REQUIRE(chdir("/") == 0);
}

}  // namespace
}  // namespace clusterd
