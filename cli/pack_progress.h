// The one line clusterctl shows while packing a working_dir, on a terminal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace clusterd {

// "Packing working_dir: 1,234/2,000 files, 40.0/100.0 MiB" (both sizes in the
// total's unit).
std::string FormatPackProgress(uint64_t done_bytes, uint64_t total_bytes, size_t done_files, size_t total_files);

// A ProgressFn (package_builder.h) that redraws the line in place on `fd`,
// and prints nothing at all unless `fd` is a terminal. Finish() (or the
// destructor) ends the line if one was drawn.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(int fd = 2);
  ~ProgressPrinter() { Finish(); }
  ProgressPrinter(const ProgressPrinter&) = delete;
  ProgressPrinter& operator=(const ProgressPrinter&) = delete;

  void operator()(uint64_t done_bytes, uint64_t total_bytes, size_t done_files, size_t total_files);
  void Finish();

 private:
  int fd_;
  bool tty_;
  bool drawn_ = false;
};

}  // namespace clusterd
