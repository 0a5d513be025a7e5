// A head's blob store in a temporary folder, for tests that drive HeadCore
// with jobs whose packages, checkpoints and outputs it must hold.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "common/sha256.h"
#include "daemon/store/blob_store.h"
#include "store.pb.h"

namespace clusterd::testing {

struct BlobStoreDir {
  std::filesystem::path path;
  std::unique_ptr<BlobStore> blobs;
  explicit BlobStoreDir(int64_t cap = 0) {
    char name[] = "/tmp/head-blobs-test-XXXXXX";
    path = mkdtemp(name);
    blobs = std::move(*BlobStore::Open({path.string(), cap}));
  }
  ~BlobStoreDir() { std::filesystem::remove_all(path); }

  // `data` as a blob (already there is fine); its id.
  std::string Put(const std::string& data) {
    auto writer = blobs->Create(Sha256Hex(data), static_cast<int64_t>(data.size()));
    if (!writer.ok()) return Sha256Hex(data);  // already there
    REQUIRE((*writer)->Append(data).ok());
    REQUIRE((*writer)->Commit().ok());
    return Sha256Hex(data);
  }

  // Where blob `id`'s file lies in the folder ("" when it has none).
  std::filesystem::path FileOf(const std::string& id) const {
    for (const auto& file : std::filesystem::recursive_directory_iterator(path)) {
      if (file.path().filename() == id) return file.path();
    }
    return {};
  }

  // A manifest of one file whose single piece is `content`.
  std::string Folder(const std::string& content) {
    Manifest manifest;
    manifest.set_chunk_bytes(4 << 20);
    auto* entry = manifest.add_entries();
    entry->set_path("model.pt");
    entry->set_size(static_cast<int64_t>(content.size()));
    entry->add_chunks(Put(content));
    return Put(manifest.SerializeAsString());
  }
};

}  // namespace clusterd::testing
