// A journal whose store is away (etcd gone: each call waits out its
// deadline) retries off the loop: while the store's check is blocked, the
// loop goes on answering (Writable refuses at once, Health says why), and
// once the store answers again a snapshot heals the journal.
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/config.h"
#include "daemon/event_loop.h"
#include "daemon/head/job_journal.h"
#include "daemon/head/job_store.h"
#include "daemon/head/journal_syncer.h"

using namespace clusterd;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

namespace {

// Whether the store is away, shared with the tasks it hands out: while it
// is, a call to it blocks until it comes back (or kMaxWait), as a call to
// an etcd with no quorum waits out its deadline, and then fails.
struct Away {
  static constexpr auto kMaxWait = 10s;
  std::mutex mu;
  std::condition_variable changed;
  bool away = false;

  void Set(bool now_away) {
    {
      std::lock_guard<std::mutex> lock(mu);
      away = now_away;
    }
    changed.notify_all();
  }
  // OK once the store is back; Unavailable when it stayed away kMaxWait.
  Status Wait() {
    std::unique_lock<std::mutex> lock(mu);
    if (changed.wait_for(lock, kMaxWait, [this] { return !away; })) return Status::Ok();
    return Status::Unavailable("the store stayed away");
  }
};

class AwayStore : public MemoryJobStore {
 public:
  AwayStore() {
    set_probe([away = away_] { return away->Wait(); });
  }
  Status CompactFrom(const EntrySource& source) override {
    ++compactions_on_caller_;
    RETURN_IF_ERROR(away_->Wait());
    return MemoryJobStore::CompactFrom(source);
  }
  Away& away() { return *away_; }
  int compactions() const { return compactions_on_caller_; }

 private:
  std::shared_ptr<Away> away_ = std::make_shared<Away>();
  int compactions_on_caller_ = 0;
};

JobInfo NewJob(const std::string& id) {
  JobInfo info;
  info.set_job_id(id);
  info.set_state(PENDING);
  return info;
}

}  // namespace

TEST_CASE("a journal whose store is away checks it off the loop: the loop answers at once meanwhile, and the "
          "journal heals once the store is back",
          "[journal][ha]") {
  FakeClock clock;
  Config config;
  AwayStore store;
  EventLoop loop("test-loop");
  loop.Start();
  JournalSyncer syncer(&loop);
  JobJournal journal(&clock, config, &store, [](const JobStore::EntrySink&) { return Status::Ok(); });
  loop.Call<bool>([&] {
    journal.set_syncing(syncer.Hooks());
    return true;
  });

  // A sync fails: the journal is failing, as when etcd went away.
  store.set_fail_syncs(true);
  auto acked = std::make_shared<std::promise<Status>>();
  auto ack = acked->get_future();
  loop.Call<bool>([&] {
    REQUIRE(journal.AddJob(NewJob("job-1")).ok());
    journal.WhenDurable([acked](Status status) { acked->set_value(status); });
    return true;
  });
  REQUIRE(ack.wait_for(5s) == std::future_status::ready);
  REQUIRE(ack.get().code() == Status::Code::kUnavailable);
  store.set_fail_syncs(false);
  store.away().Set(true);

  // A durable call while the store is away is refused at once; the loop is
  // not held by the retry, so the next call on it answers at once too.
  const auto asked = Steady::now();
  Status writable = loop.Call<Status>([&] { return journal.Writable(); });
  const auto refused_after = Steady::now() - asked;
  CHECK(writable.code() == Status::Code::kUnavailable);
  CHECK_THAT(writable.message(), Catch::StartsWith("the head's journal cannot be written: "));
  JournalStatus health = loop.Call<JournalStatus>([&] { return journal.Health(); });
  CHECK_FALSE(health.ok());
  CHECK(Steady::now() - asked < 2s);  // an outer bound: the store would hold it 10 s
  CHECK(refused_after < 2s);
  CHECK(store.compactions() == 0);  // no snapshot was tried on the loop
  // Another ask, and Tick, while the check is still blocked: at once, and
  // no second check is started.
  const auto again = Steady::now();
  CHECK(loop.Call<Status>([&] { return journal.Writable(); }).code() == Status::Code::kUnavailable);
  CHECK(loop.Call<Micros>([&] { return journal.Tick(); }) > clock.NowMicros());
  CHECK(Steady::now() - again < 2s);
  CHECK(store.compactions() == 0);

  // The store back: the check passes, and the snapshot it leads to heals
  // the journal, which takes durable calls again.
  store.away().Set(false);
  bool healed = false;
  for (auto until = Steady::now() + 10s; Steady::now() < until && !healed; std::this_thread::sleep_for(10ms)) {
    healed = loop.Call<bool>([&] { return journal.ok(); });
  }
  CHECK(healed);
  CHECK(store.compactions() == 1);
  CHECK(loop.Call<Status>([&] { return journal.AddJob(NewJob("job-2")); }).ok());
  loop.Stop();
}

TEST_CASE("a journal whose store has no check (a file) retries with a snapshot at once, as before", "[journal]") {
  FakeClock clock;
  Config config;
  MemoryJobStore store;
  JobJournal journal(&clock, config, &store, [](const JobStore::EntrySink&) { return Status::Ok(); });
  store.set_fail_appends(true);
  REQUIRE(journal.AddJob(NewJob("job-1")).code() == Status::Code::kUnavailable);
  REQUIRE(journal.Writable().code() == Status::Code::kUnavailable);
  store.set_fail_appends(false);
  CHECK(journal.Writable().ok());
  CHECK(journal.ok());
}
