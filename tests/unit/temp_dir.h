// A folder of its own under the temporary folder for one test, removed
// with all it holds when the test ends.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace clusterd::testing {

struct TempDir {
  std::filesystem::path path;

  // `prefix` names the folder (prefix-XXXXXX), so a leftover says whose it is.
  explicit TempDir(const std::string& prefix = "clusterd-test") {
    std::string name = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(name.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + name);
    path = name;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace clusterd::testing
