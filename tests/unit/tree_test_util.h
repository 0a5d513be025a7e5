// What the tree transfer tests share: random bytes, small pieces, a
// snapshot of a folder to compare, a checkpoint with every kind of entry,
// and the store, client and folder most tests start with.
#pragma once

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>

#include "common/storage/hash_cache.h"
#include "common/sha256.h"
#include "common/storage/tree_transfer.h"
#include "store_server.h"
#include "temp_tree.h"

namespace clusterd::testing {

inline constexpr int64_t kChunk = 64 << 10;

// What most tree transfer tests start with: the head's store served, a
// client of it holding the token, and a temporary folder.
struct StoreAndFolder {
  StoreServer head;
  std::unique_ptr<BlobClient> client = head.Client();
  TempTree t;
};

inline std::string Bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(rng() >> 56);
  return s;
}

inline TreeUploadOptions Small(HashCache* cache = nullptr) {
  TreeUploadOptions options;
  options.chunk_bytes = kChunk;
  options.cache = cache;
  return options;
}

// Every entry under `root`: "d 755", "f 644 <sha>", "l <target>".
inline std::map<std::string, std::string> Snapshot(const std::string& root) {
  std::map<std::string, std::string> out;
  namespace fs = std::filesystem;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    std::string rel = it->path().lexically_relative(root).string();
    struct stat st;
    REQUIRE(lstat(it->path().c_str(), &st) == 0);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%o", st.st_mode & 0777);
    if (S_ISLNK(st.st_mode)) {
      out[rel] = "l " + std::filesystem::read_symlink(it->path()).string();
    } else if (S_ISDIR(st.st_mode)) {
      out[rel] = std::string("d ") + mode;
    } else {
      out[rel] = std::string("f ") + mode + " " + *Sha256OfFile(it->path());
    }
  }
  return out;
}

// What is in folder `dir` itself, names only.
inline std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// A checkpoint folder with every kind of entry: files of 0, 1 and 2 pieces
// (one of exactly a piece), an executable, nested and empty folders, and
// relative and absolute symlinks inside.
inline void MakeCheckpoint(const TempTree& t) {
  t.Write("ckpt/model.pt", Bytes(3 * kChunk + 17, 1));
  t.Write("ckpt/exact.bin", Bytes(kChunk, 2));
  t.Write("ckpt/plus_one.bin", Bytes(kChunk + 1, 3));
  t.Write("ckpt/empty", "");
  t.Write("ckpt/run.sh", "#!/bin/sh\necho hi\n", 0755);
  t.Write("ckpt/nested/deeper/state.json", "{\"epoch\": 3}\n", 0600);
  t.Mkdir("ckpt/nested/empty_dir", 0750);
  t.Symlink("ckpt/latest", "nested/deeper/state.json");
  t.Symlink("ckpt/nested/up", "../model.pt");
  t.Symlink("ckpt/abs", t.Path("ckpt/exact.bin"));  // absolute, into the folder
}

}  // namespace clusterd::testing
