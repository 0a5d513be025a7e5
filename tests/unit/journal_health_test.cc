// A journal that cannot be written: durable calls are refused with
// UNAVAILABLE and change nothing, the rest of the head goes on, `status`
// says so, and a snapshot written once the disk is back heals it.
#include <signal.h>
#include <sys/resource.h>

#include <catch2/catch.hpp>

#include <google/protobuf/util/message_differencer.h>

#include "cli/status_printer.h"
#include "daemon/head/job_replay.h"
#include "head_harness.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;
using google::protobuf::util::MessageDifferencer;

namespace {

// Files this process writes cannot grow past `bytes` (EFBIG, not SIGXFSZ)
// until it goes out of scope.
struct FileSizeLimit {
  rlimit old{};
  void (*old_handler)(int) = nullptr;
  explicit FileSizeLimit(uint64_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old);
    old_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit low = old;
    low.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &low) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, old_handler);
  }
};

bool SameRecords(const std::map<std::string, JobInfo>& replayed, JobManager& jobs) {
  std::vector<JobInfo> live = jobs.List();
  if (replayed.size() != live.size()) return false;
  for (const JobInfo& job : live) {
    auto it = replayed.find(job.job_id());
    if (it == replayed.end() || !MessageDifferencer::Equals(it->second, job)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a failed journal write refuses submit, stop and delete with UNAVAILABLE and changes nothing", "[jobs][journal]") {
  Harness h;
  h.AddNode("a", 2);
  std::string running = h.Submit(1, 1, PACK);
  std::string done = h.Submit(1, 1, PACK);
  h.AnswerPort("a", 1000);
  h.Exit("a", done, 0, 0, 0);
  REQUIRE(h.Job(done).state() == SUCCEEDED);
  REQUIRE(h.head->GetStatus().journal().ok());

  h.store.set_fail_appends(true);
  size_t entries = h.store.entries().size();
  auto refused = h.head->jobs().Submit(h.Request(1, 1, PACK));
  REQUIRE(refused.status().code() == Status::Code::kUnavailable);
  REQUIRE(refused.status().message() ==
          "the head's journal cannot be written: memory job store: append failure injected; the job was not submitted");
  REQUIRE(h.head->jobs().List().size() == 2);
  REQUIRE(h.head->jobs().Get("job-0003").status().code() == Status::Code::kNotFound);

  JournalStatus health = h.head->GetStatus().journal();
  REQUIRE_FALSE(health.ok());
  REQUIRE(health.failing_since_unix_ms() == h.clock.UnixMillis());
  REQUIRE(health.reason() == "memory job store: append failure injected");
  REQUIRE_THAT(cli::FormatJournalLine(health), Catch::StartsWith("Journal: FAILING since ") &&
                                                   Catch::Contains("memory job store: append failure injected"));

  size_t sent = h.agents["a"]->sent.size();
  auto stop = h.head->jobs().Stop(running);
  REQUIRE(stop.status().code() == Status::Code::kUnavailable);
  REQUIRE_THAT(stop.status().message(), Catch::EndsWith("; the job was not stopped"));
  REQUIRE(h.Job(running).state() == RUNNING);
  REQUIRE(h.agents["a"]->sent.size() == sent);  // no kill went out
  auto deleted = h.head->jobs().Delete(done);
  REQUIRE(deleted.status().code() == Status::Code::kUnavailable);
  REQUIRE_THAT(deleted.status().message(), Catch::EndsWith("; the job was not deleted"));
  REQUIRE(h.head->jobs().Get(done).ok());

  // What agents report still happens, in memory only.
  h.Exit("a", running, 0, 0, 0);
  REQUIRE(h.Job(running).state() == SUCCEEDED);
  REQUIRE(h.store.entries().size() == entries);  // nothing was appended behind the gap

  // The disk is back: within journal_retry_ms a snapshot heals the journal,
  // and it holds what happened meanwhile.
  h.store.set_fail_appends(false);
  h.Advance(h.config.journal_retry_ms);
  health = h.head->GetStatus().journal();
  REQUIRE(health.ok());
  REQUIRE(health.snapshots() == 1);
  REQUIRE(cli::FormatJournalLine(health).rfind("Journal: ok, ", 0) == 0);
  REQUIRE(SameRecords(ReplayJobs(h.store.entries()).jobs, h.head->jobs()));

  std::string accepted = h.Submit(1, 1, PACK);
  REQUIRE(accepted == "job-0003");  // the refused submit never handed its id out
  FakeClock clock2;
  LogStore logs("");
  HeadCore restarted(&clock2, h.config, &h.store, &logs);
  REQUIRE(restarted.Restore().ok());
  REQUIRE(restarted.jobs().List().size() == 3);
  REQUIRE(restarted.jobs().Get(running)->state() == SUCCEEDED);
}

TEST_CASE("a submit while the journal fails tries a snapshot at once and is accepted when it works", "[jobs][journal]") {
  Harness h;
  h.AddNode("a", 2);
  h.store.set_fail_appends(true);
  REQUIRE(h.head->jobs().Submit(h.Request(1, 1, PACK)).status().code() == Status::Code::kUnavailable);
  REQUIRE(h.head->jobs().Submit(h.Request(1, 1, PACK)).status().code() == Status::Code::kUnavailable);
  h.store.set_fail_appends(false);
  auto id = h.head->jobs().Submit(h.Request(1, 1, PACK));  // no Tick in between
  REQUIRE(id.ok());
  REQUIRE(h.head->GetStatus().journal().ok());
  REQUIRE(ReplayJobs(h.store.entries()).jobs.count(*id) == 1);
}

TEST_CASE("a FileJobStore whose writes fail: submit is UNAVAILABLE, the journal heals, a new head replays only what was acknowledged", "[jobs][journal]") {
  TempTree dir;
  const std::string path = dir.Path("journal");
  FakeClock clock;
  LogStore logs("");
  Config config;
  Harness shape;  // only for its request builder
  std::string first, third;
  {
    auto store = FileJobStore::Open(path);
    REQUIRE(store.ok());
    HeadCore head(&clock, config, store->get(), &logs);
    REQUIRE(head.Restore().ok());
    first = *head.jobs().Submit(shape.Request(1, 1, PACK));
    {
      // The disk is full: no byte more, nor room for a snapshot.
      REQUIRE((*store)->bytes() > 64);
      FileSizeLimit full(64);
      auto refused = head.jobs().Submit(shape.Request(1, 1, PACK));
      REQUIRE(refused.status().code() == Status::Code::kUnavailable);
      REQUIRE_THAT(refused.status().message(), Catch::StartsWith("the head's journal cannot be written: write " + path) &&
                                                   Catch::EndsWith("; the job was not submitted"));
      REQUIRE(head.jobs().List().size() == 1);
      // Still full: the snapshot a retry writes fails too.
      clock.AdvanceMillis(config.journal_retry_ms);
      head.Tick();
      REQUIRE_FALSE(head.GetStatus().journal().ok());
      REQUIRE(head.jobs().Submit(shape.Request(1, 1, PACK)).status().code() == Status::Code::kUnavailable);
    }
    clock.AdvanceMillis(config.journal_retry_ms);
    head.Tick();
    REQUIRE(head.GetStatus().journal().ok());
    third = *head.jobs().Submit(shape.Request(1, 1, PACK));
  }
  auto store = FileJobStore::Open(path);
  REQUIRE(store.ok());
  HeadCore head(&clock, config, store->get(), &logs);
  REQUIRE(head.Restore().ok());
  REQUIRE(head.jobs().List().size() == 2);
  REQUIRE(head.jobs().Get(first).ok());
  REQUIRE(head.jobs().Get(third).ok());
  REQUIRE(third == "job-0002");
}
