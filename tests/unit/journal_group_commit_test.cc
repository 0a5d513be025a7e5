// Group commit: the journal writes each change at once and syncs bursts of
// them together; a call is acknowledged only once a sync covers what it
// wrote, and a failed sync acknowledges nothing.
#include <catch2/catch.hpp>

#include <deque>
#include <optional>

#include "common/clock.h"
#include "common/config.h"
#include "daemon/head/job_journal.h"
#include "daemon/head/job_store.h"
#include "manual_syncing.h"

using namespace clusterd;
using clusterd::testing::ManualSyncing;

namespace {

JobInfo NewJob(const std::string& id) {
  JobInfo info;
  info.set_job_id(id);
  info.set_state(PENDING);
  return info;
}

struct Fixture {
  FakeClock clock;
  Config config;
  MemoryJobStore store;
  ManualSyncing syncing;
  JobJournal journal{&clock, config, &store, [](const JobStore::EntrySink&) { return Status::Ok(); }};
  Fixture() { journal.set_syncing(syncing.Hooks()); }

  // Records how WhenDurable answered, once it has.
  std::shared_ptr<std::optional<Status>> Ack() {
    auto answer = std::make_shared<std::optional<Status>>();
    journal.WhenDurable([answer](Status status) { *answer = status; });
    return answer;
  }
};

}  // namespace

TEST_CASE("with nothing written since the last sync, a call is acknowledged at once", "[journal][group_commit]") {
  Fixture f;
  auto ack = f.Ack();
  REQUIRE(ack->has_value());
  REQUIRE((*ack)->ok());
  REQUIRE(f.store.syncs() == 0);
}

TEST_CASE("a burst of submits is acknowledged after one sync that covers them all", "[journal][group_commit]") {
  Fixture f;
  std::vector<std::shared_ptr<std::optional<Status>>> acks;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(f.journal.AddJob(NewJob("job-" + std::to_string(i))).ok());
    acks.push_back(f.Ack());
  }
  REQUIRE(f.store.entries().size() == 3);  // written at once
  for (auto& ack : acks) REQUIRE_FALSE(ack->has_value());
  f.syncing.RunLoop();  // the burst is over: one sync starts
  REQUIRE(f.syncing.offloaded.size() == 1);
  for (auto& ack : acks) REQUIRE_FALSE(ack->has_value());
  f.syncing.FinishSyncs();
  REQUIRE(f.store.syncs() == 1);
  for (auto& ack : acks) {
    REQUIRE(ack->has_value());
    REQUIRE((*ack)->ok());
  }
}

TEST_CASE("a change written while a sync runs waits for the next sync", "[journal][group_commit]") {
  Fixture f;
  REQUIRE(f.journal.AddJob(NewJob("a")).ok());
  auto first = f.Ack();
  f.syncing.RunLoop();
  REQUIRE(f.syncing.offloaded.size() == 1);  // syncing "a"
  REQUIRE(f.journal.AddJob(NewJob("b")).ok());
  auto second = f.Ack();
  f.syncing.RunLoop();
  REQUIRE(f.syncing.offloaded.size() == 1);  // one sync at a time
  f.syncing.FinishSyncs();
  REQUIRE(first->has_value());
  REQUIRE_FALSE(second->has_value());  // that sync began before "b" was written
  f.syncing.RunLoop();
  f.syncing.FinishSyncs();
  REQUIRE(second->has_value());
  REQUIRE((*second)->ok());
  REQUIRE(f.store.syncs() == 2);
}

TEST_CASE("a failed sync acknowledges nothing, fails the journal, and a snapshot heals it", "[journal][group_commit]") {
  Fixture f;
  REQUIRE(f.journal.AddJob(NewJob("a")).ok());
  auto ack = f.Ack();
  f.store.set_fail_syncs(true);
  f.syncing.RunLoop();
  f.syncing.FinishSyncs();
  REQUIRE(ack->has_value());
  REQUIRE((*ack)->code() == Status::Code::kUnavailable);
  REQUIRE((*ack)->message().find("the head's journal cannot be written: memory job store: sync failure injected") !=
          std::string::npos);
  REQUIRE((*ack)->message().find("may not survive a restart of the head") != std::string::npos);
  REQUIRE_FALSE(f.journal.Health().ok());
  // Durable calls are refused until a snapshot is written; then all is well.
  f.store.set_fail_syncs(false);
  REQUIRE(f.journal.Writable().ok());
  REQUIRE(f.journal.Health().ok());
  auto after = f.Ack();
  REQUIRE(after->has_value());
  REQUIRE((*after)->ok());
}

TEST_CASE("a snapshot written while calls wait acknowledges them: it holds everything", "[journal][group_commit]") {
  Fixture f;
  REQUIRE(f.journal.AddJob(NewJob("a")).ok());
  auto ack = f.Ack();
  f.store.set_fail_appends(true);
  JobInfo running = NewJob("a");
  running.set_state(RUNNING);
  f.journal.JobChanged(&running);  // fails: the journal is failing now
  REQUIRE_FALSE(f.journal.Health().ok());
  f.store.set_fail_appends(false);
  REQUIRE(f.journal.Writable().ok());  // the healing snapshot
  REQUIRE(ack->has_value());
  REQUIRE((*ack)->ok());
}
