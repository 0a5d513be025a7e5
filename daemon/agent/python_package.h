// Where this clusterd's Python package (python/clusterd, DESIGN rule 12)
// lies, so that a node puts it on its ranks' PYTHONPATH and nothing is
// installed per job: the .deb's copy beside the binary
// (<prefix>/lib/python3/dist-packages), else the source tree's python/
// folder of the build it came from.
#pragma once

#include <string>

namespace clusterd {

// The folder that holds clusterd/__init__.py for this binary, or "" when
// there is none (a binary copied away from its build).
std::string ClusterdPythonPath();

// PYTHONPATH for a rank: `package_path` ahead of what the job or the node
// set (`existing`, "" when unset); `existing` alone when package_path is "".
std::string RankPythonPath(const std::string& package_path, const std::string& existing);

}  // namespace clusterd
