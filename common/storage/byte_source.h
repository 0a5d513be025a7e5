// Bytes that come in order, piece by piece, and can be checked only once
// all of them are in: a download from the head's store unpacked as it
// arrives (BlobClient::OpenDownload into ExtractPackage), so that nothing
// waits for the whole and nothing is written twice.
#pragma once

#include <string_view>

#include "common/status.h"

namespace clusterd {

class ByteSource {
 public:
  virtual ~ByteSource() = default;

  // The next piece, valid until the next call; an empty one at the end.
  virtual Status Next(std::string_view* piece) = 0;
  // Reads whatever the caller did not, then checks the whole (its size and
  // hash). Until this returns OK, whatever was made from the pieces may be
  // wrong and must be thrown away. Call once.
  virtual Status Finish() = 0;
};

}  // namespace clusterd
