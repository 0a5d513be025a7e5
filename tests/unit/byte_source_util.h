// A ByteSource over bytes in memory, as a download from the head's store
// would hand them: in small pieces, checked against an id only in Finish.
// `flip_at` corrupts one byte on the way (a transfer gone bad); `fail_at`
// ends the stream early with an error (a connection lost).
#pragma once

#include <algorithm>
#include <string>

#include "common/storage/byte_source.h"
#include "common/sha256.h"

namespace clusterd::testing {

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string bytes, std::string id, size_t piece = 700)
      : bytes_(std::move(bytes)), id_(std::move(id)), piece_(piece) {}

  size_t flip_at = std::string::npos;
  size_t fail_at = std::string::npos;
  bool finished = false;
  size_t read = 0;  // bytes handed out, by Next and by Finish's drain

  Status Next(std::string_view* piece) override {
    *piece = {};
    if (read >= fail_at) return Status::Unavailable("the head went away");
    size_t n = std::min(piece_, bytes_.size() - read);
    if (flip_at >= read && flip_at < read + n) bytes_[flip_at] ^= 0x5a;
    *piece = std::string_view(bytes_).substr(read, n);
    hash_.Update(piece->data(), n);
    read += n;
    return Status::Ok();
  }

  Status Finish() override {
    finished = true;
    std::string_view piece;
    do {
      RETURN_IF_ERROR(Next(&piece));
    } while (!piece.empty());
    std::string got = hash_.HexDigest();
    if (got != id_) return Status::Corruption("blob " + id_ + " from the head failed its hash check (its bytes hash to " + got + ")");
    return Status::Ok();
  }

 private:
  std::string bytes_;
  std::string id_;
  size_t piece_;
  Sha256 hash_;
};

}  // namespace clusterd::testing
