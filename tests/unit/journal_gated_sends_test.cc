// A leader in HA sends its agents nothing before the journal holds the
// change that caused it (journal_gated_sends.h): a launch waits for the
// sync, a failed sync holds it until the journal heals, and held messages
// keep their order. A single head sends at once.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "daemon/head/journal_gated_sends.h"
#include "head_harness.h"
#include "manual_syncing.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

HeadMessage KillOf(const std::string& job_id) {
  HeadMessage message;
  message.mutable_kill()->set_job_id(job_id);
  return message;
}

}  // namespace

TEST_CASE("a leader in HA launches only once the journal holds the placement, a single head at once",
          "[head_core][ha]") {
  QuietLogs quiet;
  Harness h;
  ManualSyncing syncing;
  h.head->jobs().set_journal_syncing(syncing.Hooks());
  const bool gated = GENERATE(false, true);
  if (gated) h.head->GateSendsOnJournal();
  h.AddNode("a", 2);
  const std::string job = h.Submit(1, 1, PACK);
  REQUIRE(h.Job(job).state() == RUNNING);
  CHECK(h.Launches("a").size() == (gated ? 0u : 1u));
  syncing.RunLoop();
  syncing.FinishSyncs();
  REQUIRE(h.Launches("a").size() == 1);
  CHECK(h.Launches("a")[0].job_id() == job);
}

TEST_CASE("a leader in HA whose sync fails holds the launch until a snapshot heals the journal, then sends it",
          "[head_core][ha]") {
  QuietLogs quiet;
  Harness h;
  ManualSyncing syncing;
  h.head->jobs().set_journal_syncing(syncing.Hooks());
  h.head->GateSendsOnJournal();
  h.AddNode("a", 2);
  const std::string job = h.Submit(1, 1, PACK);
  syncing.RunLoop();
  REQUIRE(syncing.offloaded.size() == 1);
  // etcd refuses the write (away, or this head deposed): nothing goes.
  syncing.offloaded.front().second(Status::Unavailable("etcd does not answer"));
  syncing.offloaded.clear();
  CHECK_FALSE(h.head->jobs().JournalOk());
  h.head->Tick();
  CHECK(h.Launches("a").empty());
  // The journal's retry writes a snapshot (it holds the placement), then
  // the held launch goes.
  h.Advance(h.config.journal_retry_ms + 500);
  CHECK(h.head->jobs().JournalOk());
  REQUIRE(h.Launches("a").size() == 1);
  CHECK(h.Launches("a")[0].job_id() == job);
}

TEST_CASE("gated sends: held messages go in the order they were sent, behind a failed sync's, and only once "
          "the journal is writable",
          "[head_core][ha]") {
  std::vector<std::function<void(Status)>> waiting;
  bool journal_ok = true;
  std::vector<std::string> sent;
  JournalGatedSends sends([&](std::function<void(Status)> done) { waiting.push_back(std::move(done)); },
                          [&] { return journal_ok; }, [](const std::string& node) { return node == "a"; },
                          [&](const std::string& node, const HeadMessage& message) {
                            sent.push_back(node + ":" + message.kill().job_id());
                            return true;
                          });
  CHECK(sends.Send("a", KillOf("j1")));
  CHECK_FALSE(sends.Send("b", KillOf("j2")));  // b has no stream: said at once
  CHECK(sends.waiting() == 2);
  CHECK(sent.empty());
  // The sync fails: both are held, in order.
  journal_ok = false;
  for (auto& done : waiting) done(Status::Unavailable("deposed"));
  waiting.clear();
  CHECK(sends.held() == 2);
  sends.Send("a", KillOf("j3"));  // while failing: behind them
  sends.Release();                // still failing: nothing goes
  CHECK(sent.empty());
  CHECK(sends.held() == 3);
  journal_ok = true;
  sends.Release();
  REQUIRE(waiting.size() == 1);
  waiting[0](Status::Ok());
  CHECK(sent == std::vector<std::string>{"a:j1", "b:j2", "a:j3"});
  CHECK(sends.held() == 0);
  CHECK(sends.waiting() == 0);
}
