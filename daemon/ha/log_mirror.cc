#include "daemon/ha/log_mirror.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <memory>

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
  ASSIGN_OR_RETURN(S3ClientOptions client, S3ClientOptionsFor(url, endpoint));
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
  read_back_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (reader_.joinable()) reader_.join();
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

std::string LogMirror::ReadLogText(const LogId& log, const LogChunkPlan& plan, int64_t* unread) {
  std::string text;
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
    *unread += size;
    text += fmt::format("[clusterd: {} bytes of this log could not be read back from S3: {}]\n", size,
                        data.status().message());
    LOG_WARN("rank logs: job {} rank {}: {}", log.first, log.second, data.status().message());
  }
  return text;
}

Status LogMirror::Seed(LogStore* store, const std::function<ReadBack(const std::string& job_id)>& when) {
  const auto began = std::chrono::steady_clock::now();
  const std::string prefix = LogChunksPrefix(location_.prefix);
  // One LIST of the whole prefix (paged): a LIST per job would cost a round
  // trip for each of the cluster's jobs before the leader serves.
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
  const auto listed = std::chrono::steady_clock::now();
  std::vector<std::pair<LogId, LogChunkPlan>> now;
  std::map<std::string, JobPlans> later;
  size_t left_out = 0;
  const std::string* job_seen = nullptr;
  ReadBack job_when = ReadBack::kNever;
  for (auto& [log, of_log] : chunks) {
    // The map is by job: `when` is asked once per job.
    if (!job_seen || log.first != *job_seen) {
      job_seen = &log.first;
      job_when = when(log.first);
    }
    if (job_when == ReadBack::kNow) {
      now.emplace_back(log, PlanLogChunks(std::move(of_log)));
    } else if (job_when == ReadBack::kLater) {
      later[log.first].emplace_back(log.second, PlanLogChunks(std::move(of_log)));
    } else {
      ++left_out;
    }
  }

  std::mutex store_mutex;  // the store is not thread-safe; the logs are read at once
  int64_t bytes = 0, gaps = 0, unread = 0;
  ForEachParallel(now.size(), [&](size_t i) {
    const auto& [log, plan] = now[i];
    int64_t not_read = 0;
    std::string text = ReadLogText(log, plan, &not_read);
    std::lock_guard<std::mutex> lock(store_mutex);
    store->Append(log.first, log.second, text);
    bytes += static_cast<int64_t>(text.size());
    gaps += plan.gap_bytes;
    unread += not_read;
  });
  size_t later_logs = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    store_ = store;
    for (const auto& [log, plan] : now) buffers_[log].start = plan.end;
    for (const auto& [job_id, plans] : later) {
      for (const auto& [rank, plan] : plans) buffers_[{job_id, rank}].start = plan.end;
      later_logs += plans.size();
    }
    later_ = std::move(later);
  }
  const auto ms = [](auto from, auto to) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
  };
  const auto done = std::chrono::steady_clock::now();
  LOG_INFO("rank logs: listed {} chunk{} in {} ms; read {} log{} ({}) back from {} before serving, in {} "
           "ms{}{}; {} log{} of final jobs are read back after this head serves{}",
           keys.size(), keys.size() == 1 ? "" : "s", ms(began, listed), now.size(), now.size() == 1 ? "" : "s",
           HumanBytes(static_cast<uint64_t>(bytes)), location_.ToString(), ms(listed, done),
           gaps > 0 ? fmt::format(", {} bytes missing from them", gaps) : "",
           unread > 0 ? fmt::format(", {} bytes unreadable", unread) : "", later_logs, later_logs == 1 ? "" : "s",
           left_out > 0 ? fmt::format("; {} of jobs this head does not know stay in S3 unread", left_out) : "");
  StartWorker();
  return Status::Ok();
}

void LogMirror::ReadBackLater(std::function<void(std::function<void()>)> post) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reader_.joinable() || stopping_) return;
  post_ = std::move(post);
  reader_ = std::thread([this] { RunReadBack(); });
}

void LogMirror::RunReadBack() {
  const auto began = std::chrono::steady_clock::now();
  int64_t jobs = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_ && !later_.empty()) {
    // A batch: the jobs a reader waits for first, then in order of their ids.
    std::vector<std::pair<std::string, JobPlans>> batch;
    const size_t batch_size = static_cast<size_t>(std::max(options_.parallel, 1));
    for (const std::string& job_id : asked_) {
      auto job = later_.find(job_id);
      if (job == later_.end() || batch.size() >= batch_size) continue;
      if (std::none_of(batch.begin(), batch.end(), [&](const auto& taken) { return taken.first == job_id; })) {
        batch.emplace_back(job->first, job->second);
      }
    }
    asked_.clear();
    for (auto job = later_.begin(); job != later_.end() && batch.size() < batch_size; ++job) {
      if (std::none_of(batch.begin(), batch.end(), [&](const auto& taken) { return taken.first == job->first; })) {
        batch.emplace_back(job->first, job->second);
      }
    }
    lock.unlock();
    // Every log of the batch at once, not job by job: a job may have many ranks.
    auto read = std::make_shared<std::vector<ReadJob>>(batch.size());
    std::vector<std::pair<size_t, size_t>> logs;  // (job, rank's plan) in the batch
    for (size_t i = 0; i < batch.size(); ++i) {
      (*read)[i].job_id = batch[i].first;
      (*read)[i].logs.resize(batch[i].second.size());
      for (size_t j = 0; j < batch[i].second.size(); ++j) logs.emplace_back(i, j);
    }
    ForEachParallel(logs.size(), [&](size_t k) {
      const auto [i, j] = logs[k];
      const auto& [rank, plan] = batch[i].second[j];
      int64_t unread = 0;
      (*read)[i].logs[j] = {rank, ReadLogText({batch[i].first, rank}, plan, &unread)};
    });
    jobs += static_cast<int64_t>(batch.size());
    lock.lock();
    if (stopping_) break;
    const int64_t posted = ++batches_posted_;
    lock.unlock();
    post_([this, read] { AppendReadBack(*read); });
    lock.lock();
    // One batch at a time on the loop: the loop is never handed more than
    // `parallel` jobs' logs at once, and a reader's job goes in the next.
    read_back_.wait(lock, [&] { return stopping_ || batches_appended_ >= posted; });
  }
  if (!stopping_ && jobs > 0) {
    LOG_INFO("rank logs: the logs of {} final job{} were read back in {} ms after this head began serving", jobs,
             jobs == 1 ? "" : "s",
             std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began).count());
  }
}

void LogMirror::AppendReadBack(std::vector<ReadJob>& batch) {
  for (const ReadJob& job : batch) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // Deleted meanwhile (OnDeleted took it out): its logs stay gone.
      if (later_.count(job.job_id) == 0) continue;
    }
    AppendBefore(job);
    std::lock_guard<std::mutex> lock(mutex_);
    later_.erase(job.job_id);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++batches_appended_;
  }
  read_back_.notify_all();
}

void LogMirror::AppendBefore(const ReadJob& job) {
  LogStore* store = store_;
  // What is read back is in S3 already: it is not told to the observer
  // (this mirror, which would write it again as new output).
  LogStoreObserver* observer = store->observer();
  store->set_observer(nullptr);
  AppendBeforeUntold(store, job);
  store->set_observer(observer);
}

void LogMirror::AppendBeforeUntold(LogStore* store, const ReadJob& job) {
  bool newer = false;
  int last_rank = -1;
  for (const auto& [rank, text] : job.logs) {
    newer = newer || store->Size(job.job_id, rank) > 0;
    last_rank = std::max(last_rank, rank);
  }
  if (!newer) {
    for (const auto& [rank, text] : job.logs) store->Append(job.job_id, rank, text);
    return;
  }
  // Output reached the job's logs before what came before it: the job's
  // logs are written again, the old text first (S3 has both parts, at
  // their offsets, already).
  std::map<int, std::string> current;
  int64_t seen = 0;
  const int64_t job_bytes = store->JobBytes(job.job_id);
  for (int rank = 0; (seen < job_bytes || rank <= last_rank) && rank < (1 << 20); ++rank) {
    const int64_t size = store->Size(job.job_id, rank);
    if (size == 0) continue;
    int64_t end = 0;
    auto text = store->Read(job.job_id, rank, 0, size, &end);
    if (text.ok()) current[rank] = std::move(*text);
    seen += size;
    last_rank = std::max(last_rank, rank);
  }
  store->Delete(job.job_id, last_rank + 1);
  for (const auto& [rank, text] : job.logs) store->Append(job.job_id, rank, text + current[rank]);
  for (const auto& [rank, text] : current) {
    if (std::none_of(job.logs.begin(), job.logs.end(), [rank = rank](const auto& old) { return old.first == rank; })) {
      store->Append(job.job_id, rank, text);
    }
  }
}

Status LogMirror::WaitForJob(const std::string& job_id, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (later_.count(job_id) == 0) return Status::Ok();
  asked_.push_back(job_id);
  read_back_.notify_all();
  if (read_back_.wait_for(lock, timeout, [&] { return stopping_ || later_.count(job_id) == 0; }) &&
      later_.count(job_id) == 0) {
    return Status::Ok();
  }
  return Status::Unavailable(fmt::format(
      "the logs of job {} are still being read back from S3 by this head, which became the leader moments ago{}: "
      "try again",
      job_id, timeout.count() > 0 ? fmt::format(" (waited {} ms)", timeout.count()) : ""));
}

size_t LogMirror::jobs_to_read_back() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return later_.size();
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
  // A job deleted before its logs were read back: they are not read back.
  if (later_.erase(job_id) > 0) read_back_.notify_all();
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
  read_back_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (reader_.joinable()) reader_.join();
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
