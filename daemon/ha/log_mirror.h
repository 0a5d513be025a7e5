// Rank logs in S3 for heads in HA (docs/HA.md, rank logs): the leader keeps
// its rank logs on its own disk as a single head does (LogStore), and this
// writes what the store keeps on to the cluster's S3 store as chunk objects
// (common/logs/log_chunks.h), so that the next leader can read them back.
//
// Writing: the store tells each append (LogStoreObserver::OnKept) on the
// head's event loop, which only adds it to the log's buffer here. A worker
// thread of its own writes each log's buffered output as one object every
// ha_log_flush_ms, or sooner once a log has ha_log_chunk_kb buffered: S3
// calls block, and the loop never waits for one. A write that fails stays
// buffered and is tried again at the next flush; the buffers together are
// held to ha_log_buffer_mb, and output past it is not written to S3 but
// counted and logged (the next leader marks where it is missing). A
// deleted job's chunks are deleted by the worker too, after any write of
// theirs under way.
//
// Reading back (Seed): a new leader, before it serves, lists every chunk,
// reads each log's chunks in order (PlanLogChunks) into its empty store,
// and goes on writing each log from where its chunks end. Offsets in a log
// are S3's: a gap in the chunks is kept as a line saying so, which may be
// shorter than the gap, so the store's offsets and S3's may differ after
// one; this class counts S3's.
// Thread-safe: OnKept and OnDeleted on the loop, the writes on its worker.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/logs/log_limiter.h"
#include "common/logs/log_store.h"
#include "common/status.h"
#include "common/storage/s3_client.h"
#include "common/storage/s3_config.h"

namespace clusterd {

class LogMirror final : public LogStoreObserver {
 public:
  struct Options {
    int flush_ms = 1000;                        // ha_log_flush_ms
    int64_t chunk_bytes = int64_t{1} << 20;     // ha_log_chunk_kb
    int64_t buffer_bytes = int64_t{64} << 20;   // ha_log_buffer_mb
    int64_t term = 0;                           // this leader's term: its lease revision
    int parallel = 8;                           // objects read or written at once
  };
  // What a mirror did, for logs and tests.
  struct Counts {
    int64_t chunks_written = 0;
    int64_t bytes_written = 0;
    int64_t failed_writes = 0;
    int64_t bytes_lost = 0;     // past the buffer: never written to S3
    int64_t buffered_bytes = 0;  // not in S3 yet
  };

  // The store at `url` (s3://BUCKET[/PREFIX]) through `endpoint` (--s3-endpoint).
  // InvalidArgument for options out of their ranges, naming the config key.
  static Result<std::unique_ptr<LogMirror>> Open(const std::string& url, const std::string& endpoint,
                                                 const Options& options);
  LogMirror(S3ClientOptions client, S3Location location, const Options& options);
  // Stops the worker without writing what is still buffered (Stop writes it).
  ~LogMirror() override;

  // Reads every log in S3 back into `store`, which holds none of them yet,
  // and starts the worker. Blocks: before the leader serves. An error only
  // when the chunks cannot be listed; a chunk that cannot be read is a
  // line in the log that says so.
  Status Seed(LogStore* store);
  // Starts the worker without reading anything back (for tests).
  void StartWorker();

  void OnKept(const std::string& job_id, int rank, const std::string& data) override;
  void OnDeleted(const std::string& job_id) override;

  // Writes what is buffered now (one try), then stops the worker. A leader
  // stopped on purpose loses nothing of its logs this way.
  void Stop();
  // Writes what is buffered now, once, and waits for it (for tests).
  void FlushNow();
  Counts counts() const;

 private:
  using LogId = std::pair<std::string, int>;  // job id, rank
  struct Buffer {
    int64_t start = 0;  // S3's offset of data[0]: where the log's next chunk starts
    std::string data;
  };
  struct Write {
    LogId log;
    int64_t start = 0;
    std::string data;
    Status written;
  };

  void Run();
  // Takes every buffer and writes it, the lock released meanwhile; a failed
  // write goes back to its buffer unless output was dropped behind it.
  void FlushLocked(std::unique_lock<std::mutex>& lock);
  void DeleteJobChunks(const std::string& job_id);
  // Runs fn(i) for i in [0, n), `parallel` at once.
  void ForEachParallel(size_t n, const std::function<void(size_t)>& fn) const;
  Result<std::string> ReadChunk(const std::string& key, int64_t skip, int64_t size);

  S3Client client_;
  const S3Location location_;
  const Options options_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable flushed_;
  std::map<LogId, Buffer> buffers_;
  std::vector<std::string> deletes_;  // jobs whose chunks go
  int64_t buffered_ = 0;             // bytes in buffers_ and in writes under way
  bool urgent_ = false;              // a log has chunk_bytes buffered
  bool stopping_ = false;
  int64_t flush_rounds_ = 0;         // flushes done, for FlushNow
  int64_t flush_asked_ = 0;
  Counts counts_;
  LogLimiter warnings_{5, 10'000'000};
  std::thread worker_;
};

}  // namespace clusterd
