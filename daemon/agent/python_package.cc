#include "daemon/agent/python_package.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/file_util.h"

namespace clusterd {

namespace {

bool HoldsPackage(const std::string& dir) { return !dir.empty() && access((dir + "/clusterd/__init__.py").c_str(), R_OK) == 0; }

}  // namespace

std::string ClusterdPythonPath() {
  // An installed binary (/usr/bin/clusterd) first: a build's source tree
  // may be gone, or newer than what was installed.
  const std::string exe_dir = ExecutableDir();
  if (!exe_dir.empty()) {
    char resolved[PATH_MAX];
    if (realpath((exe_dir + "/../lib/python3/dist-packages").c_str(), resolved) && HoldsPackage(resolved)) {
      return resolved;
    }
  }
#ifdef CLUSTERD_SOURCE_PYTHON_DIR
  if (HoldsPackage(CLUSTERD_SOURCE_PYTHON_DIR)) return CLUSTERD_SOURCE_PYTHON_DIR;
#endif
  return "";
}

std::string RankPythonPath(const std::string& package_path, const std::string& existing) {
  if (package_path.empty()) return existing;
  return existing.empty() ? package_path : package_path + ":" + existing;
}

}  // namespace clusterd
