#include "daemon/ha/etcd_job_store.h"

#include <fmt/format.h>

#include <chrono>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "common/threads.h"
#include "daemon/ha/fenced_txn.h"

namespace clusterd {
namespace {

constexpr size_t kFrameHeaderBytes = 4;
constexpr const char* kDeposedWord = "deposed";

std::string Digits16(int64_t n) { return fmt::format("{:016d}", n); }

void AppendFramed(const std::string& payload, std::string* out) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  const char header[kFrameHeaderBytes] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                                          static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
  out->append(header, kFrameHeaderBytes);
  out->append(payload);
}

}  // namespace

// A chunk ready to be written: its key and its value, fixed once made.
struct EtcdChunk {
  std::string key;
  std::string value;
};

struct EtcdJobStore::Shared {
  EtcdClient* client = nullptr;
  EtcdJobStoreOptions options;
  std::string root;        // "<prefix>/state/<name>/"
  std::string leader_key;  // "<prefix>/leader"

  // Entries appended and not yet taken by a flush, framed, and where each
  // one ends (a chunk ends only at an entry's end).
  std::mutex pending_mu;
  std::string pending;
  std::vector<size_t> pending_ends;
  std::condition_variable pending_cv;  // the flush thread waits on it
  bool stopping = false;

  // Held by every write to etcd, so that chunks land in order.
  std::mutex write_mu;
  int64_t generation = 1;
  int64_t next_seq = 1;
  std::vector<EtcdChunk> unsure;  // chunks a failed write may or may not have landed: written again first
  int64_t last_flip_revision = 0;  // the revision of the last compaction's flip (0: none seen by this store)

  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> deposed{false};
  std::mutex deposed_mu;
  Status deposed_status;

  std::string GenerationKey() const { return root + "generation"; }
  std::string GenerationPrefix(int64_t generation) const { return root + "g" + Digits16(generation) + "/"; }
  std::string ChunkKey(int64_t generation, int64_t seq) const { return GenerationPrefix(generation) + Digits16(seq); }

  Status DeposedStatus() {
    std::lock_guard<std::mutex> lock(deposed_mu);
    return deposed_status;
  }

  // Marks the head deposed (once) and returns the refusal.
  Status Depose() {
    bool first = false;
    Status status;
    {
      std::lock_guard<std::mutex> lock(deposed_mu);
      if (!deposed.load()) {
        deposed_status = Status::FailedPrecondition(fmt::format(
            "etcd state store '{}': this head was {} as leader (the leader key {} no longer has create_revision {}): "
            "it must step down; nothing of this write was applied",
            options.name, kDeposedWord, leader_key, options.leader_revision));
        deposed.store(true);
        first = true;
      }
      status = deposed_status;
    }
    if (first) {
      LOG_ERROR("{}", status.message());
      if (options.on_deposed) options.on_deposed(status);
    }
    return status;
  }

  // One fenced write. REQUIRES: write_mu held.
  Result<int64_t> Fenced(const std::vector<EtcdOp>& ops, const std::string& what) {
    if (deposed.load()) return DeposedStatus();
    auto outcome = ApplyFencedTxn(client, leader_key, options.leader_revision, ops);
    if (!outcome.ok()) {
      return Status::Unavailable(fmt::format("etcd state store '{}': {} failed: {}", options.name, what,
                                             outcome.status().message()));
    }
    if (outcome->deposed) return Depose();
    return outcome->revision;
  }

  // Writes the chunks in order, each in its own fenced transaction. On a
  // failure the chunk that failed and those after it stay in `unsure`.
  // REQUIRES: write_mu held.
  Status WriteChunks(std::vector<EtcdChunk> chunks) {
    for (size_t i = 0; i < chunks.size(); ++i) {
      auto written = Fenced({EtcdOp::Put(chunks[i].key, chunks[i].value)},
                            fmt::format("writing chunk {} ({} bytes)", chunks[i].key, chunks[i].value.size()));
      if (!written.ok()) {
        unsure.assign(std::make_move_iterator(chunks.begin() + static_cast<std::ptrdiff_t>(i)),
                      std::make_move_iterator(chunks.end()));
        return written.status();
      }
    }
    unsure.clear();
    return Status::Ok();
  }

  // Writes what an earlier failure left unsure, then everything appended
  // so far: durable when OK.
  Status Flush() {
    std::lock_guard<std::mutex> write_lock(write_mu);
    if (deposed.load()) return DeposedStatus();
    std::vector<EtcdChunk> chunks = std::move(unsure);
    unsure.clear();
    std::string taken;
    std::vector<size_t> ends;
    {
      std::lock_guard<std::mutex> lock(pending_mu);
      taken.swap(pending);
      ends.swap(pending_ends);
    }
    size_t begin = 0;
    size_t cut = 0;  // the end of the last entry that fits in the chunk from `begin`
    for (size_t end : ends) {
      if (end - begin > static_cast<size_t>(options.txn_bytes) && cut > begin) {
        chunks.push_back({ChunkKey(generation, next_seq++), taken.substr(begin, cut - begin)});
        begin = cut;
      }
      cut = end;
    }
    if (cut > begin) chunks.push_back({ChunkKey(generation, next_seq++), taken.substr(begin, cut - begin)});
    return WriteChunks(std::move(chunks));
  }
};

bool IsDeposedStatus(const Status& status) {
  return status.code() == Status::Code::kFailedPrecondition &&
         status.message().find(std::string("was ") + kDeposedWord + " as leader") != std::string::npos;
}

Result<std::unique_ptr<EtcdJobStore>> EtcdJobStore::Open(EtcdClient* client, EtcdJobStoreOptions options) {
  if (client == nullptr) return Status::InvalidArgument("etcd state store: no etcd client");
  if (options.name.empty() || options.name.find('/') != std::string::npos) {
    return Status::InvalidArgument("etcd state store: its name must be a non-empty word without '/', not '" +
                                   options.name + "'");
  }
  if (options.leader_revision <= 0) {
    return Status::FailedPrecondition("etcd state store '" + options.name +
                                      "': no leader revision (only a leader may open the head's state)");
  }
  if (options.txn_bytes < (16 << 10) || options.txn_bytes > (8 << 20)) {
    return Status::InvalidArgument(fmt::format("ha_etcd_txn_kb must be 16 to 8192, not {}", options.txn_bytes >> 10));
  }
  if (options.flush_ms != 0 && (options.flush_ms < 10 || options.flush_ms > 10000)) {
    return Status::InvalidArgument(fmt::format("ha_etcd_flush_ms must be 10 to 10000, not {}", options.flush_ms));
  }
  auto shared = std::make_shared<Shared>();
  shared->client = client;
  shared->root = options.prefix + "/state/" + options.name + "/";
  shared->leader_key = options.prefix + "/leader";
  shared->options = std::move(options);

  auto pointer = client->Get(shared->GenerationKey());
  if (!pointer.ok()) return pointer.status().WithContext("etcd state store '" + shared->options.name + "'");
  if (!pointer->kvs.empty()) {
    const std::string& text = pointer->kvs[0].value;
    try {
      size_t used = 0;
      shared->generation = std::stoll(text, &used);
      if (used != text.size() || shared->generation < 1) throw std::invalid_argument(text);
    } catch (const std::exception&) {
      return Status::Corruption(fmt::format("etcd state store '{}': {} holds '{}', not a generation number",
                                            shared->options.name, shared->GenerationKey(), text));
    }
  }
  // The next chunk's number: chunks are numbered from 1 without gaps, so
  // the first absent number, found by doubling then halving, is it.
  auto exists = [&](int64_t seq) -> Result<bool> {
    auto got = client->Get(shared->ChunkKey(shared->generation, seq));
    if (!got.ok()) return got.status().WithContext("etcd state store '" + shared->options.name + "'");
    return !got->kvs.empty();
  };
  int64_t present = 0;  // a number known present (0: none)
  int64_t absent = 1;   // a number known absent
  while (true) {
    ASSIGN_OR_RETURN(bool there, exists(absent));
    if (!there) break;
    present = absent;
    absent *= 2;
  }
  while (absent - present > 1) {
    const int64_t mid = present + (absent - present) / 2;
    ASSIGN_OR_RETURN(bool there, exists(mid));
    (there ? present : absent) = mid;
  }
  shared->next_seq = absent;  // bytes() counts from LoadAll on
  auto store = std::unique_ptr<EtcdJobStore>(new EtcdJobStore(std::move(shared)));
  return store;
}

EtcdJobStore::EtcdJobStore(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {
  if (shared_->options.flush_ms > 0) {
    flusher_ = StartNamedThread("etcd-flush-" + shared_->options.name, [this] { FlushLoop(); });
  }
}

EtcdJobStore::~EtcdJobStore() {
  {
    std::lock_guard<std::mutex> lock(shared_->pending_mu);
    shared_->stopping = true;
  }
  shared_->pending_cv.notify_all();
  if (flusher_.joinable()) flusher_.join();
}

void EtcdJobStore::FlushLoop() {
  Shared* s = shared_.get();
  bool failing = false;
  while (true) {
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(s->pending_mu);
      s->pending_cv.wait(lock, [s, failing] { return s->stopping || !s->pending.empty() || failing; });
      // Entries wait up to flush_ms, so that a burst goes in one write (a
      // sync may take them sooner).
      s->pending_cv.wait_for(lock, std::chrono::milliseconds(s->options.flush_ms), [s] { return s->stopping; });
      stopping = s->stopping;
    }
    if (s->deposed.load()) return;
    Status flushed = s->Flush();
    if (!flushed.ok() && !failing) LOG_WARN("{} (retried every {} ms)", flushed.message(), s->options.flush_ms);
    if (flushed.ok() && failing) LOG_INFO("etcd state store '{}': writes go through again", s->options.name);
    failing = !flushed.ok();
    if (stopping) return;
  }
}

Status EtcdJobStore::Append(const JournalEntry& entry) {
  if (shared_->deposed.load()) return shared_->DeposedStatus();
  std::string payload;
  if (!entry.SerializeToString(&payload)) return Status::Internal("cannot serialize journal entry");
  if (payload.size() + kFrameHeaderBytes > static_cast<size_t>(shared_->options.txn_bytes)) {
    return Status::InvalidArgument(fmt::format(
        "etcd state store '{}': a journal entry of {} bytes (job '{}') is larger than one etcd transaction may "
        "carry (ha_etcd_txn_kb: {} KiB)",
        shared_->options.name, payload.size(), entry.job_id(), shared_->options.txn_bytes >> 10));
  }
  {
    std::lock_guard<std::mutex> lock(shared_->pending_mu);
    AppendFramed(payload, &shared_->pending);
    shared_->pending_ends.push_back(shared_->pending.size());
  }
  shared_->bytes += payload.size() + kFrameHeaderBytes;
  shared_->pending_cv.notify_one();
  return Status::Ok();
}

std::function<Status()> EtcdJobStore::SyncTask() {
  return [shared = shared_] { return shared->Flush(); };
}

std::function<Status()> EtcdJobStore::ProbeTask() {
  return [shared = shared_] {
    std::lock_guard<std::mutex> write_lock(shared->write_mu);
    return shared->Fenced({}, "checking that etcd can be written").status();
  };
}

Result<std::vector<JournalEntry>> EtcdJobStore::LoadAll() {
  Shared* s = shared_.get();
  std::lock_guard<std::mutex> write_lock(s->write_mu);
  if (s->deposed.load()) return s->DeposedStatus();
  std::vector<JournalEntry> entries;
  uint64_t bytes = 0;
  // Chunks one by one: a generation can be far larger than one gRPC reply.
  for (int64_t seq = 1;; ++seq) {
    const std::string key = s->ChunkKey(s->generation, seq);
    auto got = s->client->Get(key);
    if (!got.ok()) return got.status().WithContext("etcd state store '" + s->options.name + "': reading " + key);
    if (got->kvs.empty()) {
      // A chunk a failed write left unsure is not there yet: it comes
      // next, and the store's own reader must not stop short of it.
      if (seq >= s->next_seq) break;
      bool pending_write = false;
      for (const auto& chunk : s->unsure) pending_write = pending_write || chunk.key == key;
      if (pending_write) break;
      return Status::Corruption(fmt::format("etcd state store '{}': chunk {} is missing (the generation has {})",
                                            s->options.name, key, s->next_seq - 1));
    }
    const std::string& value = got->kvs[0].value;
    bytes += value.size();
    size_t at = 0;
    while (at < value.size()) {
      if (value.size() - at < kFrameHeaderBytes) {
        return Status::Corruption(fmt::format("etcd state store '{}': chunk {} ends inside a header", s->options.name, key));
      }
      const auto* h = reinterpret_cast<const unsigned char*>(value.data() + at);
      const size_t n = h[0] | (h[1] << 8) | (h[2] << 16) | (static_cast<size_t>(h[3]) << 24);
      at += kFrameHeaderBytes;
      if (value.size() - at < n) {
        return Status::Corruption(fmt::format("etcd state store '{}': chunk {} ends inside an entry", s->options.name, key));
      }
      JournalEntry entry;
      if (!entry.ParseFromArray(value.data() + at, static_cast<int>(n))) {
        return Status::Corruption(fmt::format("etcd state store '{}': chunk {} holds a record that is not a "
                                              "JournalEntry (entry {})",
                                              s->options.name, key, entries.size()));
      }
      entries.push_back(std::move(entry));
      at += n;
    }
  }
  // What is buffered is not persisted yet, but counts toward the size.
  {
    std::lock_guard<std::mutex> lock(s->pending_mu);
    bytes += s->pending.size();
  }
  s->bytes = bytes;
  return entries;
}

Status EtcdJobStore::CompactFrom(const EntrySource& source) {
  Shared* s = shared_.get();
  std::lock_guard<std::mutex> write_lock(s->write_mu);
  if (s->deposed.load()) return s->DeposedStatus();
  const int64_t old_generation = s->generation;
  const int64_t generation = old_generation + 1;
  // What an earlier compaction that failed half-way left.
  auto cleared = s->Fenced({EtcdOp::DeletePrefix(s->GenerationPrefix(generation))},
                           "clearing generation " + std::to_string(generation));
  if (!cleared.ok()) return cleared.status();

  int64_t seq = 1;
  uint64_t bytes = 0;
  std::string chunk;
  std::string payload;  // one buffer for every entry
  auto write_chunk = [&]() -> Status {
    const std::string key = s->ChunkKey(generation, seq);
    auto written = s->Fenced({EtcdOp::Put(key, chunk)}, fmt::format("writing snapshot chunk {}", key));
    if (!written.ok()) return written.status();
    bytes += chunk.size();
    ++seq;
    chunk.clear();
    return Status::Ok();
  };
  Status emitted = source([&](const JournalEntry& entry) -> Status {
    payload.clear();
    if (!entry.SerializeToString(&payload)) return Status::Internal("cannot serialize journal entry");
    const size_t framed = payload.size() + kFrameHeaderBytes;
    if (framed > static_cast<size_t>(s->options.txn_bytes)) {
      return Status::InvalidArgument(
          fmt::format("etcd state store '{}': a snapshot entry of {} bytes (job '{}') is larger than one etcd "
                      "transaction may carry (ha_etcd_txn_kb: {} KiB)",
                      s->options.name, payload.size(), entry.job_id(), s->options.txn_bytes >> 10));
    }
    if (chunk.size() + framed > static_cast<size_t>(s->options.txn_bytes)) RETURN_IF_ERROR(write_chunk());
    AppendFramed(payload, &chunk);
    return Status::Ok();
  });
  if (emitted.ok() && !chunk.empty()) emitted = write_chunk();
  if (!emitted.ok()) return emitted.WithContext("compaction (the old generation is whole)");

  auto flipped = s->Fenced({EtcdOp::Put(s->GenerationKey(), std::to_string(generation)),
                            EtcdOp::DeletePrefix(s->GenerationPrefix(old_generation))},
                           "switching to generation " + std::to_string(generation));
  if (!flipped.ok()) return flipped.status().WithContext("compaction (the old generation is whole)");

  // The snapshot replaces what was appended and not yet written, and what a
  // failed write left unsure: their effect is in it.
  s->generation = generation;
  s->next_seq = seq;
  s->unsure.clear();
  {
    std::lock_guard<std::mutex> lock(s->pending_mu);
    s->pending.clear();
    s->pending_ends.clear();
  }
  s->bytes = bytes;
  // etcd keeps every revision until compacted: drop those before the
  // previous flip, keeping the latest stretch for watchers that lag.
  if (s->last_flip_revision > 0) {
    Status compacted = s->client->Compact(s->last_flip_revision);
    if (!compacted.ok() && compacted.message().find("compacted") == std::string::npos) {
      LOG_WARN("etcd state store '{}': compacting etcd's history to revision {}: {}", s->options.name,
               s->last_flip_revision, compacted.message());
    }
  }
  s->last_flip_revision = *flipped;
  return Status::Ok();
}

uint64_t EtcdJobStore::bytes() const { return shared_->bytes.load(); }

bool EtcdJobStore::deposed() const { return shared_->deposed.load(); }

std::string EtcdJobStore::root() const { return shared_->root; }

int64_t EtcdJobStore::generation() const {
  std::lock_guard<std::mutex> lock(shared_->write_mu);
  return shared_->generation;
}

}  // namespace clusterd
