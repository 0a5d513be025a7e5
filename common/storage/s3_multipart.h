// S3 multipart uploads, a concern apart from the client's single requests
// (s3_client.h): parts of a known-size source go up in parallel, and a
// streaming writer sends parts as they fill. A failed upload is aborted,
// so the server keeps no parts. Both go through the client's S3Transport.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "common/storage/s3_client.h"

namespace clusterd {

// `size` bytes from `fill` in parts of client.options().part_bytes, up to
// options().parallel_parts at once. S3Client::Put calls it above a part.
Status S3PutMultipart(S3Client& client, const std::string& bucket, const std::string& key, int64_t size,
                      const S3Client::FillFn& fill, const S3Client::ProgressFn& progress);

// A writer that sends each part as it fills (S3Client::StartWrite).
std::unique_ptr<S3Client::Writer> S3StartMultipartWrite(S3Client* client, const std::string& bucket,
                                                       const std::string& key);

}  // namespace clusterd
