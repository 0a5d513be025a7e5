// SHA-256 over OpenSSL's EVP interface: the id of a code package is the hash
// of its archive bytes, and the hash cache keeps one per file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace clusterd {

// Incremental SHA-256. Not thread-safe; one message per object.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // The digest of everything fed so far, as 64 lower-case hex digits. Does
  // not end the message: more Update calls may follow.
  std::string HexDigest() const;

 private:
  evp_md_ctx_st* ctx_;
};

// The hex digest of `data` in one call.
std::string Sha256Hex(std::string_view data);

// The hex digest of the file's bytes, read in 1 MiB pieces.
Result<std::string> Sha256OfFile(const std::string& path);
// The same from an open descriptor, read from where it stands to its end;
// `path` names it in errors.
Result<std::string> Sha256OfFd(int fd, const std::string& path);

}  // namespace clusterd
