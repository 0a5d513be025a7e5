#include "cli/pack_progress.h"

#include <unistd.h>

#include <fmt/format.h>

namespace clusterd {
namespace {

std::string Grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void WriteAll(int fd, const std::string& text) {
  for (size_t at = 0; at < text.size();) {
    ssize_t n = write(fd, text.data() + at, text.size() - at);
    if (n <= 0) return;  // progress is best effort
    at += static_cast<size_t>(n);
  }
}

}  // namespace

std::string FormatPackProgress(uint64_t done_bytes, uint64_t total_bytes, size_t done_files, size_t total_files) {
  std::string sizes;
  if (total_bytes < 1024) {
    sizes = fmt::format("{}/{} B", done_bytes, total_bytes);
  } else {
    static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
    double scale = 1024;
    int unit = 0;
    while (unit < 3 && static_cast<double>(total_bytes) / scale >= 1024) {
      scale *= 1024;
      ++unit;
    }
    sizes = fmt::format("{:.1f}/{:.1f} {}", static_cast<double>(done_bytes) / scale,
                        static_cast<double>(total_bytes) / scale, kUnits[unit]);
  }
  return fmt::format("Packing working_dir: {}/{} files, {}", Grouped(done_files), Grouped(total_files), sizes);
}

ProgressPrinter::ProgressPrinter(int fd) : fd_(fd), tty_(isatty(fd) == 1) {}

void ProgressPrinter::operator()(uint64_t done_bytes, uint64_t total_bytes, size_t done_files,
                                 size_t total_files) {
  if (!tty_) return;
  // Clear to the end of the line: the new text may be shorter.
  WriteAll(fd_, "\r" + FormatPackProgress(done_bytes, total_bytes, done_files, total_files) + "\x1b[K");
  drawn_ = true;
}

void ProgressPrinter::Finish() {
  if (drawn_) WriteAll(fd_, "\n");
  drawn_ = false;
}

}  // namespace clusterd
