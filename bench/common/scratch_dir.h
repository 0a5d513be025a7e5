// A benchmark's scratch folder under /tmp: made private by mkdtemp, removed
// with everything in it when the run ends, however it ends.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace clusterd::bench {

class ScratchDir {
 public:
  // `prefix` names the bench ("shipping-bench"); ok() is false when mkdtemp failed.
  explicit ScratchDir(const std::string& prefix) {
    std::string name = "/tmp/" + prefix + "-XXXXXX";
    if (mkdtemp(name.data()) != nullptr) path_ = name;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace clusterd::bench
