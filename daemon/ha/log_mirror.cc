#include "daemon/ha/log_mirror.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/logging.h"
#include "common/logs/log_chunks.h"
#include "common/text.h"

namespace clusterd {
namespace {

// A chunk write is tried this many times before it waits for the next
// flush: the next flush is the retry, and a worker stuck in backoffs would
// hold every other log's output back.
constexpr int kChunkWriteAttempts = 2;

Status CheckRange(const char* key, int64_t value, int64_t low, int64_t high) {
  if (value >= low && value <= high) return Status::Ok();
  return Status::InvalidArgument(fmt::format("{} must be {} to {}, not {}", key, low, high, value));
}

}  // namespace

Result<std::unique_ptr<LogMirror>> LogMirror::Open(const std::string& url, const std::string& endpoint,
                                                   const Options& options) {
  RETURN_IF_ERROR(CheckRange("ha_log_flush_ms", options.flush_ms, 100, 60000));
  RETURN_IF_ERROR(CheckRange("ha_log_chunk_kb", options.chunk_bytes >> 10, 16, 65536));
  RETURN_IF_ERROR(CheckRange("ha_log_buffer_mb", options.buffer_bytes >> 20, 1, 4096));
  ASSIGN_OR_RETURN(S3Location location, ParseS3Location(url));
  S3ClientOptions client;
  ASSIGN_OR_RETURN(client.endpoint, ResolveS3Endpoint(endpoint));
  auto credentials = LoadS3Credentials();
  if (!credentials.ok()) {
    return Status::Unauthenticated(fmt::format("{} at {}: {}", url, client.endpoint.url, credentials.status().message()));
  }
  client.credentials = *credentials;
  client.max_attempts = kChunkWriteAttempts;
  return std::make_unique<LogMirror>(client, location, options);
}

LogMirror::LogMirror(S3ClientOptions client, S3Location location, const Options& options)
    : client_(std::move(client)), location_(std::move(location)), options_(options) {}

LogMirror::~LogMirror() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void LogMirror::ForEachParallel(size_t n, const std::function<void(size_t)>& fn) const {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  const size_t threads = std::min<size_t>(n, static_cast<size_t>(std::max(options_.parallel, 1)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
}

Result<std::string> LogMirror::ReadChunk(const std::string& key, int64_t skip, int64_t size) {
  std::string data;
  RETURN_IF_ERROR(client_.Get(location_.bucket, key, [&data](const char* bytes, size_t n) {
    data.append(bytes, n);
    return Status::Ok();
  }));
  if (static_cast<int64_t>(data.size()) != size) {
    return Status::Corruption(fmt::format("s3://{}/{} holds {} bytes, and its name says {}", location_.bucket, key,
                                          data.size(), size));
  }
  return data.substr(static_cast<size_t>(skip));
}

Status LogMirror::Seed(LogStore* store) {
  const auto began = std::chrono::steady_clock::now();
  const std::string prefix = LogChunksPrefix(location_.prefix);
  ASSIGN_OR_RETURN(std::vector<std::string> keys, client_.List(location_.bucket, prefix));
  std::map<LogId, std::vector<StoredLogChunk>> chunks;
  for (const std::string& key : keys) {
    auto chunk = ParseLogChunkKey(location_.prefix, key);
    if (!chunk.ok()) {
      LOG_WARN("rank logs in S3: {}: left out", chunk.status().message());
      continue;
    }
    chunks[{chunk->job_id, chunk->rank}].push_back(std::move(*chunk));
  }
  std::vector<std::pair<LogId, LogChunkPlan>> plans;
  plans.reserve(chunks.size());
  for (auto& [log, of_log] : chunks) plans.emplace_back(log, PlanLogChunks(std::move(of_log)));

  std::mutex store_mutex;  // the store is not thread-safe; the logs are read at once
  int64_t bytes = 0, gaps = 0, unread = 0;
  ForEachParallel(plans.size(), [&](size_t i) {
    const auto& [log, plan] = plans[i];
    std::string text;
    int64_t not_read = 0;
    for (const auto& piece : plan.pieces) {
      if (piece.gap_before > 0) text += LogGapLine(piece.gap_before);
      auto data = ReadChunk(piece.chunk.key, piece.skip, piece.chunk.end - piece.chunk.start);
      if (data.ok()) {
        text += *data;
        continue;
      }
      // Marked, not fatal: the chunk stays in S3 for the next leader, and
      // this one's output goes on at S3's offsets all the same; a chunk no
      // head could read must not keep every head from leading.
      const int64_t size = piece.chunk.end - piece.chunk.start - piece.skip;
      not_read += size;
      text += fmt::format("[clusterd: {} bytes of this log could not be read back from S3: {}]\n", size,
                          data.status().message());
      LOG_WARN("rank logs: job {} rank {}: {}", log.first, log.second, data.status().message());
    }
    std::lock_guard<std::mutex> lock(store_mutex);
    store->Append(log.first, log.second, text);
    bytes += static_cast<int64_t>(text.size());
    gaps += plan.gap_bytes;
    unread += not_read;
  });
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [log, plan] : plans) buffers_[log].start = plan.end;
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
  LOG_INFO("rank logs: read {} log{} ({}) back from {} in {} ms{}{}", plans.size(), plans.size() == 1 ? "" : "s",
           HumanBytes(static_cast<uint64_t>(bytes)), location_.ToString(), took.count(),
           gaps > 0 ? fmt::format(", {} bytes missing from them", gaps) : "",
           unread > 0 ? fmt::format(", {} bytes unreadable", unread) : "");
  StartWorker();
  return Status::Ok();
}

void LogMirror::StartWorker() {
  if (!worker_.joinable()) worker_ = std::thread([this] { Run(); });
}

void LogMirror::OnKept(const std::string& job_id, int rank, const std::string& data) {
  std::lock_guard<std::mutex> lock(mutex_);
  Buffer& buffer = buffers_[{job_id, rank}];
  if (buffered_ + static_cast<int64_t>(data.size()) > options_.buffer_bytes) {
    // Past the cap the log's buffer goes with the new output: S3 then holds
    // a gap here, which the next leader marks, rather than a chunk whose
    // offsets would be wrong.
    const int64_t dropped = static_cast<int64_t>(buffer.data.size() + data.size());
    buffered_ -= static_cast<int64_t>(buffer.data.size());
    buffer.start += dropped;
    buffer.data.clear();
    counts_.bytes_lost += dropped;
    int64_t held_back = 0;
    if (warnings_.Allow(SystemClock().NowMicros(), &held_back)) {
      LOG_WARN("rank logs: {} bytes of job {} rank {} were not written to S3: with {} waiting for S3 already, they "
               "would pass ha_log_buffer_mb ({}); {} lost in all{}",
               dropped, job_id, rank, HumanBytes(static_cast<uint64_t>(buffered_)),
               HumanBytes(static_cast<uint64_t>(options_.buffer_bytes)),
               HumanBytes(static_cast<uint64_t>(counts_.bytes_lost)),
               held_back > 0 ? fmt::format(" ({} such warnings held back)", held_back) : "");
    }
    return;
  }
  buffer.data += data;
  buffered_ += static_cast<int64_t>(data.size());
  if (static_cast<int64_t>(buffer.data.size()) >= options_.chunk_bytes && !urgent_) {
    urgent_ = true;
    wake_.notify_one();
  }
}

void LogMirror::OnDeleted(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = buffers_.lower_bound({job_id, std::numeric_limits<int>::min()});
       it != buffers_.end() && it->first.first == job_id;) {
    buffered_ -= static_cast<int64_t>(it->second.data.size());
    it = buffers_.erase(it);
  }
  deletes_.push_back(job_id);
  wake_.notify_one();
}

void LogMirror::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(options_.flush_ms),
                   [this] { return stopping_ || urgent_ || !deletes_.empty() || flush_asked_ > flush_rounds_; });
    if (stopping_) break;
    FlushLocked(lock);
  }
}

void LogMirror::FlushLocked(std::unique_lock<std::mutex>& lock) {
  urgent_ = false;
  const int64_t round = flush_asked_;
  std::vector<Write> writes;
  for (auto& [log, buffer] : buffers_) {
    if (buffer.data.empty()) continue;
    Write write;
    write.log = log;
    write.start = buffer.start;
    write.data = std::move(buffer.data);
    buffer.data.clear();
    buffer.start += static_cast<int64_t>(write.data.size());
    writes.push_back(std::move(write));
  }
  std::vector<std::string> deletes = std::move(deletes_);
  deletes_.clear();
  lock.unlock();
  ForEachParallel(writes.size(), [this, &writes](size_t i) {
    Write& write = writes[i];
    const int64_t end = write.start + static_cast<int64_t>(write.data.size());
    write.written = client_.PutData(
        location_.bucket, LogChunkKey(location_.prefix, write.log.first, write.log.second, write.start, end,
                                      options_.term),
        write.data);
  });
  // After the writes: a deleted job's last chunk is not written after its deletion.
  for (const std::string& job_id : deletes) DeleteJobChunks(job_id);
  lock.lock();
  for (Write& write : writes) {
    const int64_t size = static_cast<int64_t>(write.data.size());
    buffered_ -= size;
    if (write.written.ok()) {
      ++counts_.chunks_written;
      counts_.bytes_written += size;
      continue;
    }
    ++counts_.failed_writes;
    auto buffer = buffers_.find(write.log);
    if (buffer == buffers_.end()) continue;  // the job was deleted meanwhile
    // Back in front of what came since, unless output behind it was dropped
    // meanwhile (the buffer moved on past a gap) or there is no room.
    if (buffer->second.start == write.start + size && buffered_ + size <= options_.buffer_bytes) {
      buffer->second.data.insert(0, write.data);
      buffer->second.start = write.start;
      buffered_ += size;
    } else {
      counts_.bytes_lost += size;
    }
    int64_t held_back = 0;
    if (warnings_.Allow(SystemClock().NowMicros(), &held_back)) {
      LOG_WARN("rank logs: cannot write {} bytes of job {} rank {} to S3 (tried again at the next flush): {}{}", size,
               write.log.first, write.log.second, write.written.message(),
               held_back > 0 ? fmt::format(" ({} such warnings held back)", held_back) : "");
    }
  }
  flush_rounds_ = std::max(flush_rounds_, round);
  flushed_.notify_all();
}

void LogMirror::DeleteJobChunks(const std::string& job_id) {
  auto keys = client_.List(location_.bucket, JobChunksPrefix(location_.prefix, job_id));
  Status deleted = keys.status();
  if (keys.ok()) {
    for (const std::string& key : *keys) {
      Status one = client_.Delete(location_.bucket, key);
      if (!one.ok() && deleted.ok()) deleted = one;
    }
  }
  if (!deleted.ok()) LOG_WARN("rank logs: job {}: its chunks in S3 stay: {}", job_id, deleted.message());
}

void LogMirror::FlushNow() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!worker_.joinable() || stopping_) {
    FlushLocked(lock);
    return;
  }
  const int64_t asked = ++flush_asked_;
  wake_.notify_one();
  flushed_.wait(lock, [&] { return flush_rounds_ >= asked || stopping_; });
}

void LogMirror::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  std::unique_lock<std::mutex> lock(mutex_);
  FlushLocked(lock);
}

LogMirror::Counts LogMirror::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Counts counts = counts_;
  counts.buffered_bytes = buffered_;
  return counts;
}

}  // namespace clusterd
