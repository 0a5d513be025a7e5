#include "work_folder.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include <fmt/format.h>

namespace clusterd::bench {

namespace {

namespace fs = std::filesystem;

bool WriteBytes(const std::string& path, const std::string& data, std::string* error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) *error = "cannot write " + path;
  return static_cast<bool>(out);
}

// Lines of lowercase "words", like source code in size and in how it packs.
std::string SmallFile(std::mt19937_64& rng, size_t size) {
  std::string text;
  text.reserve(size);
  while (text.size() < size) {
    size_t word = 2 + rng() % 9;
    for (size_t i = 0; i < word && text.size() < size; ++i) text += static_cast<char>('a' + rng() % 26);
    if (text.size() < size) text += rng() % 8 == 0 ? '\n' : ' ';
  }
  return text;
}

std::string RandomBytes(std::mt19937_64& rng, size_t size) {
  std::string data(size, '\0');
  for (size_t i = 0; i + 8 <= size; i += 8) {
    uint64_t word = rng();
    std::copy(reinterpret_cast<const char*>(&word), reinterpret_cast<const char*>(&word) + 8, data.begin() + i);
  }
  return data;
}

}  // namespace

bool GenerateFolder(const std::string& root, const FolderSpec& spec, FolderStats* stats, std::string* error) {
  *stats = {};
  std::error_code ec;
  if (!fs::create_directories(root + "/bin", ec) || !fs::create_directories(root + "/data", ec)) {
    *error = "cannot create " + root + ": " + ec.message();
    return false;
  }
  stats->dirs = 3;  // root, bin, data
  std::mt19937_64 rng(spec.seed);

  std::vector<std::string> dirs;
  for (int a = 0; a < 10; ++a) {
    for (int b = 0; b < 10; ++b) dirs.push_back(fmt::format("{}/src/pkg{}/mod{}", root, a, b));
  }
  for (const std::string& dir : dirs) fs::create_directories(dir, ec);
  stats->dirs += 1 + 10 + 100;  // src, pkgN, pkgN/modM
  for (int i = 0; i < spec.small_files; ++i) {
    std::string text = SmallFile(rng, 512 + rng() % 4097);
    if (!WriteBytes(fmt::format("{}/file{:04}.py", dirs[i % dirs.size()], i), text, error)) return false;
    stats->bytes += text.size();
    ++stats->files;
  }

  if (!fs::copy_file(spec.rank_program, root + "/bin/noop_rank", ec)) {
    *error = "cannot copy " + spec.rank_program + ": " + ec.message();
    return false;
  }
  chmod((root + "/bin/noop_rank").c_str(), 0755);
  stats->bytes += fs::file_size(root + "/bin/noop_rank");
  ++stats->files;

  uint64_t total = static_cast<uint64_t>(spec.total_mib) << 20;
  uint64_t rest = total > stats->bytes ? total - stats->bytes : 0;
  uint64_t each = spec.large_files > 0 ? rest / static_cast<uint64_t>(spec.large_files) / 8 * 8 : 0;
  for (int i = 0; i < spec.large_files; ++i) {
    if (!WriteBytes(fmt::format("{}/data/shard{}.bin", root, i), RandomBytes(rng, each), error)) return false;
    stats->bytes += each;
    stats->large_bytes += each;
    ++stats->files;
  }
  return true;
}

}  // namespace clusterd::bench
