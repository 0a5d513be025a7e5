// A JobStore (daemon/head/job_store.h) in etcd, for heads in HA: what the
// local journal holds, kept where a new leader reads it back.
//
// Keys, under `<prefix>/state/<name>/` (name: "jobs", "sweeps", ...):
//   generation            the current generation's number (absent: 1)
//   g<GEN>/<SEQ>          a chunk: whole journal entries, each as a 4-byte
//                         little-endian length and the serialized entry,
//                         in append order; GEN and SEQ are 16 digits, so
//                         key order is append order
//
// Every write is one etcd transaction fenced by the leader revision
// (fenced_txn.h): applied only while `<prefix>/leader` still has the
// create_revision this head won its election with. A deposed leader's write
// is refused whole; from then on every call of the store fails with a
// FailedPrecondition that says "deposed", and on_deposed is called once, so
// that the head steps down at once.
//
// Group commit: Append only buffers. A sync (SyncTask) writes everything
// buffered when it runs as chunks of at most txn_bytes, each one fenced
// transaction (etcd refuses requests over its --max-request-bytes, 1.5 MiB
// by default), in order. A burst larger than one chunk is therefore not
// atomic as a whole: after a failure a prefix of it, in append order, may
// have landed, as a torn tail of the file journal may; the sync reports
// the failure, so nothing of the burst was acknowledged. A chunk whose
// write failed keeps its key and is written again, first, by the next sync
// (a put of the same key and value: harmless if the failed one landed), so
// the chunks of a generation never have a gap. An entry is never split
// between chunks; one larger than txn_bytes is refused at Append.
// Entries appended with no sync after them (the nodes' records) are sent
// by a thread of the store within flush_ms.
//
// Compaction (CompactFrom) writes the snapshot as the next generation's
// chunks, then one fenced transaction points `generation` at it and
// deletes the old generation: until that flip a reader sees the old state
// whole, and a failure leaves it so (the half-written generation is
// deleted by the next attempt). Then etcd's history is compacted up to the
// previous flip's revision, so the keyspace holds about two generations'
// revisions at most.
//
// Thread-safety: Append, CompactFrom, LoadAll and bytes on the head's loop
// (as for every JobStore); the sync tasks and the flush thread on theirs.
// Writes to etcd are serialized inside.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "daemon/ha/etcd_client.h"
#include "daemon/head/job_store.h"

namespace clusterd {

struct EtcdJobStoreOptions {
  std::string prefix;           // the cluster's key prefix (EtcdEndpoints::prefix); the leader key is prefix + "/leader"
  std::string name;             // which journal: a key-safe word ("jobs", "nodes", ...)
  int64_t leader_revision = 0;  // the leader key's create_revision this head leads with
  int txn_bytes = 1 << 20;      // ha_etcd_txn_kb, in bytes: the most one transaction carries
  int flush_ms = 100;           // ha_etcd_flush_ms: unsynced entries reach etcd within this; 0: only syncs write
  // Called once, on whichever thread found the head deposed, with the
  // status every later call returns.
  std::function<void(const Status&)> on_deposed;
};

class EtcdJobStore : public JobStore {
 public:
  // Reads where the store stands (its generation, how many chunks it has)
  // and starts the flush thread. REQUIRES: client outlives the store and
  // every sync task it made.
  static Result<std::unique_ptr<EtcdJobStore>> Open(EtcdClient* client, EtcdJobStoreOptions options);
  // Stops the flush thread after one last flush of what is buffered.
  ~EtcdJobStore() override;
  EtcdJobStore(const EtcdJobStore&) = delete;
  EtcdJobStore& operator=(const EtcdJobStore&) = delete;

  Status Append(const JournalEntry& entry) override;
  std::function<Status()> SyncTask() override;
  // A fenced transaction that writes nothing: OK once etcd can be written
  // by this head again (a quorum answers, and it still leads).
  std::function<Status()> ProbeTask() override;
  Result<std::vector<JournalEntry>> LoadAll() override;
  Status CompactFrom(const EntrySource& source) override;
  // The current generation's chunks' bytes, with their framing.
  uint64_t bytes() const override;

  // Whether a write found this head deposed (every call fails from then on).
  bool deposed() const;
  // Where this store's keys live: "<prefix>/state/<name>/".
  std::string root() const;
  // The generation appends go to now.
  int64_t generation() const;

  struct Shared;  // what the store shares with its sync tasks and flush thread

 private:
  explicit EtcdJobStore(std::shared_ptr<Shared> shared);
  void FlushLoop();

  std::shared_ptr<Shared> shared_;
  std::thread flusher_;
};

// Whether `status` is an EtcdJobStore's refusal of a deposed leader's write.
bool IsDeposedStatus(const Status& status);

}  // namespace clusterd
