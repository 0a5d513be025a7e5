// The head's state in etcd (daemon/ha/etcd_job_store.h) against real etcd
// members: append, group commit and load; a burst split over several
// transactions; compaction into a new generation; a deposed leader's writes
// refused whole; a new leader's store loading what the old one synced; a
// lost quorum failing a sync with a clear error, and the same sync landing
// once the quorum is back.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "daemon/ha/etcd_client.h"
#include "daemon/ha/etcd_job_store.h"
#include "daemon/ha/etcd_state_stores.h"
#include "etcd_members.h"
#include "etcd_test_client.h"
#include "harness.h"
#include "test_skip.h"

using namespace clusterd;
using namespace clusterd::testing;
using std::chrono::milliseconds;

namespace {

// Takes `<prefix>/leader` as a newly elected head would (the key created
// anew, by whoever asks): its create_revision is the new leader revision,
// and every earlier one is deposed.
int64_t TakeLeaderKey(EtcdClient* client, const std::string& prefix) {
  REQUIRE(client->Delete(prefix + "/leader").ok());
  auto txn = client->Txn({EtcdCompare::CreateRevisionIs(prefix + "/leader", 0)},
                         {EtcdOp::Put(prefix + "/leader", "{\"id\":\"test\"}")});
  REQUIRE(txn.ok());
  REQUIRE(txn->succeeded);
  auto key = client->Get(prefix + "/leader");
  REQUIRE(key.ok());
  REQUIRE(key->kvs.size() == 1);
  return key->kvs[0].create_revision;
}

EtcdJobStoreOptions StoreOptions(const std::string& prefix, int64_t leader_revision, int flush_ms = 0) {
  EtcdJobStoreOptions options;
  options.prefix = prefix;
  options.name = "jobs";
  options.leader_revision = leader_revision;
  options.flush_ms = flush_ms;
  return options;
}

std::unique_ptr<EtcdJobStore> OpenStore(EtcdClient* client, EtcdJobStoreOptions options) {
  auto store = EtcdJobStore::Open(client, std::move(options));
  INFO(store.status().ToString());
  REQUIRE(store.ok());
  return std::move(*store);
}

JournalEntry JobEntry(int n, size_t padding = 0) {
  JournalEntry entry;
  entry.set_unix_ms(1000 + n);
  JobInfo* job = entry.mutable_job();
  job->set_job_id("job-" + std::to_string(n));
  entry.set_job_id(job->job_id());
  job->set_state(SUCCEEDED);
  job->set_reason(std::string(padding, 'x'));
  return entry;
}

std::vector<std::string> JobIds(const std::vector<JournalEntry>& entries) {
  std::vector<std::string> ids;
  for (const auto& e : entries) ids.push_back(e.job_id());
  return ids;
}

std::vector<std::string> Ids(int from, int to) {
  std::vector<std::string> ids;
  for (int i = from; i <= to; ++i) ids.push_back("job-" + std::to_string(i));
  return ids;
}

size_t KeysUnder(EtcdClient* client, const std::string& prefix) {
  auto range = client->GetPrefix(prefix);
  REQUIRE(range.ok());
  return range->kvs.size();
}

}  // namespace

TEST_CASE("etcd store: appends land with a sync, a burst larger than a transaction is split in order, and load "
          "reads them back",
          "[etcd][etcd_store]") {
  REQUIRE_ETCD();
  EtcdMembers etcd(1);
  REQUIRE(etcd.error() == "");
  auto client = TestEtcdClient(etcd.client_addresses());
  const int64_t revision = TakeLeaderKey(client.get(), "/rt");
  EtcdJobStoreOptions options = StoreOptions("/rt", revision);
  options.txn_bytes = 16 << 10;
  auto store = OpenStore(client.get(), options);
  CHECK(store->root() == "/rt/state/jobs/");

  // Appends only buffer: nothing is in etcd before the sync.
  for (int i = 1; i <= 3; ++i) REQUIRE(store->Append(JobEntry(i)).ok());
  CHECK(KeysUnder(client.get(), "/rt/state/jobs/") == 0);
  auto sync = store->SyncTask();
  REQUIRE(sync().ok());
  CHECK(KeysUnder(client.get(), "/rt/state/jobs/") == 1);  // one burst, one chunk

  // 40 entries of 1 KiB are more than one 16 KiB transaction carries: several
  // chunks, in append order.
  for (int i = 4; i <= 43; ++i) REQUIRE(store->Append(JobEntry(i, 1000)).ok());
  REQUIRE(store->SyncTask()().ok());
  CHECK(KeysUnder(client.get(), "/rt/state/jobs/") >= 1 + 3);

  // An entry larger than a transaction is refused, naming the limit, and
  // the store goes on.
  Status too_big = store->Append(JobEntry(99, 20 << 10));
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.code() == Status::Code::kInvalidArgument);
  CHECK_THAT(too_big.message(), Catch::Contains("ha_etcd_txn_kb"));
  REQUIRE(store->Append(JobEntry(44)).ok());
  REQUIRE(store->SyncTask()().ok());

  auto loaded = store->LoadAll();
  REQUIRE(loaded.ok());
  CHECK(JobIds(*loaded) == Ids(1, 44));
  CHECK((*loaded)[5].job().reason() == std::string(1000, 'x'));
  CHECK(store->bytes() > 40 * 1000);

  // Another store on the same keys (a new leader) reads the same, and
  // appends after them.
  store.reset();
  auto again = OpenStore(client.get(), StoreOptions("/rt", revision));
  auto reloaded = again->LoadAll();
  REQUIRE(reloaded.ok());
  CHECK(JobIds(*reloaded) == Ids(1, 44));
  REQUIRE(again->Append(JobEntry(45)).ok());
  REQUIRE(again->SyncTask()().ok());
  CHECK(JobIds(*again->LoadAll()) == Ids(1, 45));
}

TEST_CASE("etcd store: entries appended with no sync reach etcd from the flush thread", "[etcd][etcd_store]") {
  REQUIRE_ETCD();
  EtcdMembers etcd(1);
  REQUIRE(etcd.error() == "");
  auto client = TestEtcdClient(etcd.client_addresses());
  const int64_t revision = TakeLeaderKey(client.get(), "/fl");
  auto store = OpenStore(client.get(), StoreOptions("/fl", revision, /*flush_ms=*/50));
  JournalEntry node;
  node.mutable_node()->set_machine("machine-1");
  REQUIRE(store->Append(node).ok());
  REQUIRE(WaitFor([&] { return KeysUnder(client.get(), "/fl/state/jobs/") == 1; }, milliseconds(5000)));
  auto reader = OpenStore(client.get(), StoreOptions("/fl", revision));
  auto loaded = reader->LoadAll();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->size() == 1);
  CHECK((*loaded)[0].node().machine() == "machine-1");
}

TEST_CASE("etcd store: compaction keeps exactly the snapshot and later appends, a failed one leaves the old state "
          "whole",
          "[etcd][etcd_store]") {
  REQUIRE_ETCD();
  EtcdMembers etcd(1);
  REQUIRE(etcd.error() == "");
  auto client = TestEtcdClient(etcd.client_addresses());
  const int64_t revision = TakeLeaderKey(client.get(), "/cp");
  EtcdJobStoreOptions options = StoreOptions("/cp", revision);
  options.txn_bytes = 16 << 10;
  auto store = OpenStore(client.get(), options);
  for (int i = 1; i <= 30; ++i) REQUIRE(store->Append(JobEntry(i, 1000)).ok());
  REQUIRE(store->SyncTask()().ok());
  CHECK(store->generation() == 1);

  // A snapshot whose source fails half-way (after some chunks were written):
  // the old generation stays current and whole.
  Status failed = store->CompactFrom([&](const JobStore::EntrySink& emit) -> Status {
    for (int i = 100; i < 140; ++i) RETURN_IF_ERROR(emit(JobEntry(i, 1000)));
    return Status::IOError("the snapshot's source failed");
  });
  REQUIRE_FALSE(failed.ok());
  CHECK(store->generation() == 1);
  CHECK(JobIds(*store->LoadAll()) == Ids(1, 30));
  CHECK(KeysUnder(client.get(), "/cp/state/jobs/g0000000000000002/") > 0);  // what it wrote before failing

  // Appends unsynced at the compaction are superseded by the snapshot.
  REQUIRE(store->Append(JobEntry(31)).ok());
  REQUIRE(store->Compact({JobEntry(2), JobEntry(7), JobEntry(9)}).ok());
  CHECK(store->generation() == 2);
  REQUIRE(store->Append(JobEntry(50)).ok());
  REQUIRE(store->Append(JobEntry(51)).ok());
  REQUIRE(store->SyncTask()().ok());

  auto reader = OpenStore(client.get(), StoreOptions("/cp", revision));
  auto loaded = reader->LoadAll();
  REQUIRE(loaded.ok());
  CHECK(JobIds(*loaded) == std::vector<std::string>{"job-2", "job-7", "job-9", "job-50", "job-51"});
  // The old generation and the failed attempt's leftovers are gone: the
  // pointer and the new generation's chunks only.
  auto pointer = client->Get("/cp/state/jobs/generation");
  REQUIRE(pointer.ok());
  REQUIRE(pointer->kvs.size() == 1);
  CHECK(pointer->kvs[0].value == "2");
  CHECK(KeysUnder(client.get(), "/cp/state/jobs/g0000000000000001/") == 0);
  CHECK(KeysUnder(client.get(), "/cp/state/jobs/") == 1 + 2);  // the snapshot's chunk and the appends' one

  // A second compaction compacts etcd's history up to the first one's flip:
  // the member's compacted revision moves, so old revisions are gone.
  auto before = client->MemberStatus(0);
  REQUIRE(before.ok());
  REQUIRE(store->Compact({JobEntry(9)}).ok());
  CHECK(store->generation() == 3);
  auto compacted = client->Compact(before->revision - 1);
  REQUIRE_FALSE(compacted.ok());  // already compacted past it by the store
  CHECK_THAT(compacted.message(), Catch::Contains("compacted"));
  CHECK(JobIds(*OpenStore(client.get(), StoreOptions("/cp", revision))->LoadAll()) ==
        std::vector<std::string>{"job-9"});
}

TEST_CASE("etcd store: a deposed leader's sync and compaction fail, say so, and nothing of them lands",
          "[etcd][etcd_store]") {
  REQUIRE_ETCD();
  EtcdMembers etcd(1);
  REQUIRE(etcd.error() == "");
  auto client = TestEtcdClient(etcd.client_addresses());
  const int64_t old_revision = TakeLeaderKey(client.get(), "/dp");
  std::atomic<int> told{0};
  Status told_status;
  EtcdJobStoreOptions options = StoreOptions("/dp", old_revision);
  options.on_deposed = [&](const Status& status) {
    told_status = status;
    ++told;
  };
  auto old_leader = OpenStore(client.get(), options);
  REQUIRE(old_leader->Append(JobEntry(1)).ok());
  REQUIRE(old_leader->SyncTask()().ok());

  // Another head wins the leader key.
  const int64_t new_revision = TakeLeaderKey(client.get(), "/dp");
  REQUIRE(new_revision > old_revision);

  REQUIRE(old_leader->Append(JobEntry(2)).ok());
  Status synced = old_leader->SyncTask()();
  REQUIRE_FALSE(synced.ok());
  CHECK(IsDeposedStatus(synced));
  CHECK_THAT(synced.message(), Catch::Contains("deposed") && Catch::Contains("step down"));
  CHECK(old_leader->deposed());
  CHECK(told == 1);
  CHECK(told_status.message() == synced.message());
  // From now on every call of the old leader's store is refused.
  CHECK(IsDeposedStatus(old_leader->Append(JobEntry(3))));
  CHECK(IsDeposedStatus(old_leader->Compact({JobEntry(4)})));
  CHECK(IsDeposedStatus(old_leader->LoadAll().status()));
  CHECK(told == 1);

  // Nothing of it landed: the new leader reads job-1 alone, in generation 1.
  auto new_leader = OpenStore(client.get(), StoreOptions("/dp", new_revision));
  CHECK(JobIds(*new_leader->LoadAll()) == std::vector<std::string>{"job-1"});
  CHECK(new_leader->generation() == 1);
  CHECK(client->Get("/dp/state/jobs/generation")->kvs.empty());
  REQUIRE(new_leader->Append(JobEntry(5)).ok());
  REQUIRE(new_leader->SyncTask()().ok());
  CHECK(JobIds(*new_leader->LoadAll()) == std::vector<std::string>{"job-1", "job-5"});
}

TEST_CASE("etcd store: the head's five stores open under one prefix, and a new leader's load every acknowledged "
          "entry",
          "[etcd][etcd_store]") {
  REQUIRE_ETCD();
  EtcdMembers etcd(1);
  REQUIRE(etcd.error() == "");
  auto client = TestEtcdClient(etcd.client_addresses());
  Config config;
  const int64_t first = TakeLeaderKey(client.get(), "/hs");
  {
    auto stores = OpenEtcdStateStores(client.get(), "/hs", first, config, nullptr);
    REQUIRE(stores.ok());
    for (int i = 1; i <= 200; ++i) REQUIRE(stores->jobs->Append(JobEntry(i)).ok());
    REQUIRE(stores->jobs->SyncTask()().ok());
    JournalEntry user;
    user.mutable_user()->mutable_info()->set_name("alice");
    user.mutable_user()->set_token_sha256(std::string(32, '\x01'));
    REQUIRE(stores->users->Append(user).ok());
    REQUIRE(stores->users->SyncTask()().ok());
    JournalEntry node;
    node.mutable_node()->set_machine("machine-1");
    REQUIRE(stores->nodes->Append(node).ok());  // no sync: the flush thread, or the close, writes it
  }
  const int64_t second = TakeLeaderKey(client.get(), "/hs");
  auto stores = OpenEtcdStateStores(client.get(), "/hs", second, config, nullptr);
  REQUIRE(stores.ok());
  CHECK(JobIds(*stores->jobs->LoadAll()) == Ids(1, 200));
  auto users = stores->users->LoadAll();
  REQUIRE(users.ok());
  REQUIRE(users->size() == 1);
  CHECK((*users)[0].user().info().name() == "alice");
  auto nodes = stores->nodes->LoadAll();
  REQUIRE(nodes.ok());
  REQUIRE(nodes->size() == 1);
  CHECK(stores->sweeps->LoadAll()->empty());
  CHECK(stores->quotas->LoadAll()->empty());
  CHECK(stores->nodes->root() == "/hs/state/nodes/");
}

TEST_CASE("etcd store: with the etcd quorum lost a sync fails and says why, and the same entries land once it is back",
          "[etcd][etcd_store]") {
  REQUIRE_ETCD();
  EtcdMembers etcd(3);
  REQUIRE(etcd.error() == "");
  auto client = TestEtcdClient(etcd.client_addresses());
  const int64_t revision = TakeLeaderKey(client.get(), "/qr");
  auto store = OpenStore(client.get(), StoreOptions("/qr", revision));
  REQUIRE(store->Append(JobEntry(1)).ok());
  REQUIRE(store->SyncTask()().ok());

  etcd.Kill(1);
  etcd.Kill(2);
  REQUIRE(store->Append(JobEntry(2)).ok());
  REQUIRE(store->Append(JobEntry(3)).ok());
  Status lost = store->SyncTask()();
  REQUIRE_FALSE(lost.ok());
  INFO(lost.ToString());
  CHECK(lost.code() == Status::Code::kUnavailable);
  CHECK_THAT(lost.message(), Catch::Contains("etcd state store 'jobs'"));
  CHECK_FALSE(IsDeposedStatus(lost));
  CHECK_FALSE(store->deposed());
  // Appends go on buffering meanwhile.
  REQUIRE(store->Append(JobEntry(4)).ok());

  etcd.Restart(1);
  etcd.Restart(2);
  REQUIRE(etcd.WaitHealthy(milliseconds(15000)));
  Status back = Status::Unavailable("not tried");
  REQUIRE(WaitFor(
      [&] {
        back = store->SyncTask()();
        return back.ok();
      },
      milliseconds(10000), milliseconds(200)));
  auto reader = OpenStore(client.get(), StoreOptions("/qr", revision));
  CHECK(JobIds(*reader->LoadAll()) == Ids(1, 4));
}
