// A scratch folder for the packaging tests, removed at the end of the test.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace clusterd::testing {

class TempTree {
 public:
  TempTree() {
    char dir[] = "/tmp/clusterd_pkg_test_XXXXXX";
    if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = dir;
  }
  ~TempTree() {
    // Read-only folders (a test's 0555) would stop remove_all.
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root_, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0700);
    }
    std::filesystem::remove_all(root_, ec);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::string& root() const { return root_; }
  std::string Path(const std::string& rel) const { return root_ + "/" + rel; }

  void Write(const std::string& rel, const std::string& content, mode_t mode = 0644) const {
    std::filesystem::create_directories(std::filesystem::path(Path(rel)).parent_path());
    std::ofstream(Path(rel), std::ios::binary | std::ios::trunc) << content;
    chmod(Path(rel).c_str(), mode);
  }
  void Mkdir(const std::string& rel, mode_t mode = 0755) const {
    std::filesystem::create_directories(Path(rel));
    chmod(Path(rel).c_str(), mode);
  }
  void Symlink(const std::string& rel, const std::string& target) const {
    std::filesystem::create_directories(std::filesystem::path(Path(rel)).parent_path());
    if (symlink(target.c_str(), Path(rel).c_str()) != 0) throw std::runtime_error("symlink failed: " + rel);
  }
  std::string Read(const std::string& rel) const {
    std::ifstream in(Path(rel), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

 private:
  std::string root_;
};

}  // namespace clusterd::testing
