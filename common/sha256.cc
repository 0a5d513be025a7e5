#include "common/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "common/file_util.h"

namespace clusterd {

// EVP calls fail only on allocation failure or an unusable provider; both
// mean the process cannot work at all, so they abort rather than return a
// Status from every Update.
static void CheckEvp(int ok, const char* what) {
  if (ok != 1) {
    std::fprintf(stderr, "fatal: OpenSSL %s failed\n", what);
    std::abort();
  }
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  CheckEvp(ctx_ != nullptr, "EVP_MD_CTX_new");
  CheckEvp(EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr), "EVP_DigestInit_ex");
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Update(const void* data, size_t size) {
  if (size == 0) return;
  CheckEvp(EVP_DigestUpdate(ctx_, data, size), "EVP_DigestUpdate");
}

std::string Sha256::HexDigest() const {
  // Finishing a copy leaves this context open for more input.
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> copy(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  CheckEvp(copy != nullptr, "EVP_MD_CTX_new");
  CheckEvp(EVP_MD_CTX_copy_ex(copy.get(), ctx_), "EVP_MD_CTX_copy_ex");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  CheckEvp(EVP_DigestFinal_ex(copy.get(), digest, &length), "EVP_DigestFinal_ex");
  static const char kHex[] = "0123456789abcdef";
  std::string hex(2 * length, '0');
  for (unsigned int i = 0; i < length; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return hex;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 sha;
  sha.Update(data);
  return sha.HexDigest();
}

Result<std::string> Sha256OfFd(int fd, const std::string& path) {
  Sha256 sha;
  std::vector<char> buffer(1 << 20);
  for (;;) {
    ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("cannot read " + path + ": " + std::strerror(errno));
    if (n == 0) break;
    sha.Update(buffer.data(), static_cast<size_t>(n));
  }
  return sha.HexDigest();
}

Result<std::string> Sha256OfFile(const std::string& path) {
  UniqueFd fd{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (!fd.ok()) return Status::IOError("cannot open " + path + ": " + std::strerror(errno));
  return Sha256OfFd(fd.get(), path);
}

}  // namespace clusterd
