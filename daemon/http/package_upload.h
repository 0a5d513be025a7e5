// Code packages over the dashboard's HTTP, for clients that speak no gRPC
// (clusterd.job_submission): a working_dir's package (an uncompressed tar
// whose SHA-256 is its id, cli/package_builder.h) into the head's store.
//   GET|HEAD /api/packages/<sha256>  200 {"id","present":true,"size","max_bytes"}
//                                    or 404 {"id","present":false,"max_bytes","error"}
//   PUT /api/packages/<sha256>       the tar as the body, with Content-Length:
//                                    200 {"id","present":true,"size"}
// A PUT is judged on its headers before a byte of its body is read: 411
// without a Content-Length, 413 past max_bytes, 507 when live jobs' data
// leave the store no room, 200 at once when the store has the package. The
// body then streams into a BlobStore::Writer named at its start, piece by
// piece, hashed and written on an ingest thread at low priority (neither
// the server's thread nor the head's loop); the package exists only once
// its last byte arrived and the bytes hashed to the id (else 400, nothing
// kept). A client gone midway leaves nothing behind.
#pragma once

#include <boost/asio/thread_pool.hpp>

#include <cstdint>
#include <string>

#include "common/jobspec/job_spec.h"
#include "daemon/http/http_server.h"
#include "daemon/store/blob_store.h"

namespace clusterd {

class PackageUploads {
 public:
  static constexpr char kPrefix[] = "/api/packages/";

  // REQUIRES: blobs (null: this head keeps no bytes, its store is S3) outlives this.
  // max_bytes: the largest package taken, by default clusterctl's cap when a
  // job file sets no max_package_size.
  explicit PackageUploads(BlobStore* blobs, int64_t max_bytes = kDefaultMaxPackageBytes)
      : blobs_(blobs), max_bytes_(max_bytes) {}
  ~PackageUploads();  // waits for the piece being written, drops the rest

  static bool IsPath(const std::string& path);
  // GET or HEAD; on any thread (the store is thread-safe and this is a lookup).
  HttpReply Stat(const std::string& path) const;
  // A PUT whose headers were read and whose token was checked.
  HttpStream Start(const HttpRequest& request);

 private:
  BlobStore* blobs_;
  int64_t max_bytes_;
  // One upload's pieces are written in order, one at a time; two threads
  // let two uploads go on at once.
  boost::asio::thread_pool ingest_{2};
};

}  // namespace clusterd
