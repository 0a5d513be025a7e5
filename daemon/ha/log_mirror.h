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
// Reading back (Seed): a new leader, before it serves, lists every chunk
// (one LIST of the prefix, paged), reads the logs of the jobs that are not
// final in order (PlanLogChunks) into its empty store, and goes on writing
// each log from where its chunks end. Only those must be there before it
// serves: their ranks may be adopted and go on printing after them. Every
// other log (a final job's) is read back after it serves (ReadBackLater):
// by a thread of its own, a few jobs at a time, each job's logs handed to
// the head's loop to append, so that what the new leader must read before
// it answers does not grow with the cluster's history. A read of a log not
// back yet waits for that job's (WaitForJob, which moves it to the front).
// Offsets in a log
// are S3's: a gap in the chunks is kept as a line saying so, which may be
// shorter than the gap, so the store's offsets and S3's may differ after
// one; this class counts S3's.
// Thread-safe: OnKept and OnDeleted on the loop, the writes on its worker.
#pragma once

#include <chrono>
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

#include "common/logs/log_chunks.h"
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

  // When a job's logs are read back: before the leader serves, after, or
  // not at all (a job the leader does not know: deleted while S3 could not
  // be reached; its chunks stay).
  enum class ReadBack { kNow, kLater, kNever };
  // Lists every log in S3 and reads those of the jobs `when` says kNow back
  // into `store`, which holds none of them yet; keeps the kLater ones for
  // ReadBackLater; starts the worker. Blocks: before the leader serves. An
  // error only when the chunks cannot be listed; a chunk that cannot be
  // read is a line in the log that says so. `store` must outlive this.
  Status Seed(LogStore* store, const std::function<ReadBack(const std::string& job_id)>& when);
  // Every log now (tests).
  Status Seed(LogStore* store) {
    return Seed(store, [](const std::string&) { return ReadBack::kNow; });
  }
  // Starts reading back the logs Seed left for later, on a thread of its
  // own; each batch of jobs' logs goes to the store through `post`, which
  // runs a function on the store's thread (the head's loop). Once, after Seed.
  void ReadBackLater(std::function<void(std::function<void()>)> post);
  // Blocks until the job's logs are in the store (Ok at once when none of
  // them waits), its read moved to the front; Unavailable, naming the job,
  // when `timeout` passed first (0: says at once). Never on the store's
  // thread: the logs are appended there.
  Status WaitForJob(const std::string& job_id, std::chrono::milliseconds timeout);
  // How long a read of a log not back yet waits for it: one job's chunks
  // take well under a second; this stays within a client's call
  // (rpc_timeout_ms, 5 s by default), which then hears why it failed.
  static constexpr std::chrono::milliseconds kReadBackWait{3000};
  // Jobs whose logs are still to be read back (tests, logs).
  size_t jobs_to_read_back() const;
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

  // A job's logs left for later: each rank's plan.
  using JobPlans = std::vector<std::pair<int, LogChunkPlan>>;
  // One job's logs read back by the reading thread, for the loop to append.
  struct ReadJob {
    std::string job_id;
    std::vector<std::pair<int, std::string>> logs;  // rank, text
  };

  void Run();
  void RunReadBack();
  // On the store's thread: appends a batch read back, but a job deleted
  // meanwhile; then tells the waiters.
  void AppendReadBack(std::vector<ReadJob>& batch);
  // Puts a final job's text read back in front of output that reached its
  // logs first (rare: an agent's late output for a job that ended).
  void AppendBefore(const ReadJob& job);
  void AppendBeforeUntold(LogStore* store, const ReadJob& job);
  // A log's text from its chunks, gaps and unreadable chunks marked; adds
  // to *unread the bytes that could not be read.
  std::string ReadLogText(const LogId& log, const LogChunkPlan& plan, int64_t* unread);
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

  // Reading back later: the loop's store, the jobs left (by id), those a
  // reader waits for (first), the batches handed to the loop.
  LogStore* store_ = nullptr;
  std::map<std::string, JobPlans> later_;
  std::vector<std::string> asked_;
  std::condition_variable read_back_;  // the reading thread and the waiters
  int64_t batches_posted_ = 0;
  int64_t batches_appended_ = 0;
  std::function<void(std::function<void()>)> post_;
  std::thread reader_;
};

}  // namespace clusterd
