// GetLogs through the job manager with a real LogStore in a temp folder:
// offsets a client sends are checked, never trusted (DESIGN rule 10).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "head_harness.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// A harness whose head keeps logs on disk, with one running 2-rank job.
struct LogsHarness {
  TempTree dir;
  FakeClock clock;
  MemoryJobStore store;
  LogStore logs{dir.Path("jobs")};
  Config config;
  std::unique_ptr<HeadCore> head;
  std::shared_ptr<FakeAgentConnection> agent = std::make_shared<FakeAgentConnection>();
  std::string id;

  LogsHarness() {
    head = std::make_unique<HeadCore>(&clock, config, &store, &logs);
    AgentMessage reg;
    reg.mutable_register_()->set_name("a");
    reg.mutable_register_()->set_address("10.0.0.1");
    (*reg.mutable_register_()->mutable_total()->mutable_amounts())[kCpu] = 2;
    head->OnAgentMessage(agent, reg);
    Harness shape;  // only for its request builder
    id = *head->jobs().Submit(shape.Request(2, 1, PACK));
    AgentMessage log;
    log.mutable_log()->set_job_id(id);
    log.mutable_log()->set_rank(1);
    log.mutable_log()->set_data("hello\n");
    head->OnAgentMessage(agent, log);
  }

  Result<LogsReply> Logs(int rank, std::map<int, int64_t> offsets) {
    LogsRequest request;
    request.set_job_id(id);
    request.set_rank(rank);
    for (const auto& [r, offset] : offsets) (*request.mutable_offsets())[r] = offset;
    return head->jobs().Logs(request);
  }
};

}  // namespace

TEST_CASE("GetLogs refuses negative offsets, INT64_MIN included, and the head goes on", "[jobs][logs]") {
  LogsHarness h;
  // Rank 1's log holds the banner and "hello\n".
  auto all = h.Logs(1, {});
  REQUIRE(all.ok());
  REQUIRE(all->chunks_size() == 1);
  const int64_t size = all->chunks(0).end_offset();
  REQUIRE(all->chunks(0).data().size() == static_cast<size_t>(size));

  for (int64_t bad : {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min() + 1, int64_t{-1}}) {
    auto refused = h.Logs(1, {{1, bad}});
    REQUIRE(refused.status().code() == Status::Code::kInvalidArgument);
    REQUIRE_THAT(refused.status().message(), Catch::Contains("negative"));
    // Every rank asked for: the offset of rank 1 is still checked.
    REQUIRE(h.Logs(-1, {{1, bad}}).status().code() == Status::Code::kInvalidArgument);
  }
  // The manager is unharmed.
  auto again = h.Logs(1, {{1, size - 6}});
  REQUIRE(again.ok());
  REQUIRE(again->chunks(0).data() == "hello\n");
}

TEST_CASE("GetLogs refuses offsets past the end of a log and ranks the job does not have", "[jobs][logs]") {
  LogsHarness h;
  auto all = h.Logs(1, {});
  REQUIRE(all.ok());
  const int64_t size = all->chunks(0).end_offset();

  auto at_end = h.Logs(1, {{1, size}});  // where --follow waits for more
  REQUIRE(at_end.ok());
  REQUIRE(at_end->chunks_size() == 0);

  for (int64_t bad : {size + 1, std::numeric_limits<int64_t>::max()}) {
    auto past = h.Logs(1, {{1, bad}});
    REQUIRE(past.status().code() == Status::Code::kInvalidArgument);
    REQUIRE_THAT(past.status().message(), Catch::Contains("past the end") && Catch::Contains(std::to_string(size)));
  }
  // Rank 0 has written nothing but its banner; beyond that is past its end.
  auto rank0 = h.Logs(0, {{0, 1'000'000}});
  REQUIRE(rank0.status().code() == Status::Code::kInvalidArgument);

  auto stranger = h.Logs(-1, {{7, 0}});
  REQUIRE(stranger.status().code() == Status::Code::kInvalidArgument);
  REQUIRE_THAT(stranger.status().message(), Catch::Contains("rank 7"));
}

TEST_CASE("LogStore::Read bounds offsets itself", "[logs]") {
  TempTree dir;
  LogStore logs(dir.Path("jobs"));
  logs.Append("job-0001", 0, "0123456789");
  int64_t end = -5;
  auto middle = logs.Read("job-0001", 0, 4, 3, &end);
  REQUIRE(middle.ok());
  REQUIRE(*middle == "456");
  REQUIRE(end == 7);
  REQUIRE(logs.Read("job-0001", 0, std::numeric_limits<int64_t>::min(), 3, &end).status().code() ==
          Status::Code::kInvalidArgument);
  REQUIRE(logs.Read("job-0001", 0, 11, 3, &end).status().code() == Status::Code::kInvalidArgument);
  auto none = logs.Read("job-0001", 5, 0, 3, &end);  // a rank that wrote nothing yet: an empty log
  REQUIRE(none.ok());
  REQUIRE(none->empty());
  REQUIRE(end == 0);
}

namespace {

std::string WholeLog(const LogStore& logs, const std::string& job, int rank) {
  int64_t end = 0;
  return logs.Read(job, rank, 0, std::numeric_limits<int64_t>::max(), &end).value_or("<unreadable>");
}

std::vector<std::string> NamesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("LogStore packs small logs together, moves one that grows to a file of its own, and a new head reads both",
          "[logs]") {
  TempTree dir;
  const int64_t limit = 100;
  {
    LogStore logs(dir.Path("jobs"), limit);
    for (int job = 1; job <= 50; ++job) {
      for (int rank = 0; rank < 2; ++rank) logs.Append(fmt::format("job-{:04d}", job), rank, fmt::format("r{} ", rank));
    }
    for (int job = 1; job <= 50; ++job) logs.Append(fmt::format("job-{:04d}", job), 0, "done\n");
    // No file per rank: the 100 logs share one pack.
    REQUIRE(NamesIn(dir.Path("jobs")) == std::vector<std::string>{"packs"});
    REQUIRE(NamesIn(dir.Path("jobs/packs")) == std::vector<std::string>{"000000.pack"});
    REQUIRE(WholeLog(logs, "job-0007", 0) == "r0 done\n");
    REQUIRE(WholeLog(logs, "job-0007", 1) == "r1 ");
    REQUIRE(logs.Size("job-0050", 0) == 8);
    int64_t end = 0;
    REQUIRE(logs.Read("job-0007", 0, 1, 4, &end).value_or("") == "0 do");  // across two appends
    REQUIRE(end == 5);

    // Past the limit, the log moves whole to its own file and goes on there.
    logs.Append("job-0003", 1, std::string(limit, 'x'));
    REQUIRE(dir.Read("jobs/job-0003.rank-1.log") == "r1 " + std::string(limit, 'x'));
    logs.Append("job-0003", 1, "\nend\n");
    REQUIRE(WholeLog(logs, "job-0003", 1) == "r1 " + std::string(limit, 'x') + "\nend\n");
    REQUIRE(logs.Tail("job-0003", 1, 1) == "end");
    // One larger than the limit at once never enters the packs.
    logs.Append("job-0099", 0, std::string(3 * limit, 'y'));
    REQUIRE(dir.Read("jobs/job-0099.rank-0.log") == std::string(3 * limit, 'y'));
  }
  // A restarted head: the packed and the moved logs read the same, and new
  // output goes to a pack of its own.
  LogStore again(dir.Path("jobs"), limit);
  REQUIRE(WholeLog(again, "job-0007", 0) == "r0 done\n");
  REQUIRE(WholeLog(again, "job-0003", 1) == "r1 " + std::string(limit, 'x') + "\nend\n");
  REQUIRE(again.Size("job-0099", 0) == 3 * limit);
  again.Append("job-0007", 0, "after restart\n");
  REQUIRE(WholeLog(again, "job-0007", 0) == "r0 done\nafter restart\n");
  REQUIRE(NamesIn(dir.Path("jobs/packs")) == std::vector<std::string>{"000000.pack", "000001.pack"});
  REQUIRE(WholeLog(LogStore(dir.Path("jobs"), limit), "job-0007", 0) == "r0 done\nafter restart\n");
}

TEST_CASE("LogStore::Release drops a log from memory and its own file, packed bytes staying in the pack still written",
          "[logs]") {
  TempTree dir;
  {
    LogStore logs(dir.Path("jobs"), 100);
    logs.Append("job-0001.attempt-0", 0, "small\n");
    logs.Append("job-0001.attempt-0", 1, std::string(200, 'b'));
    logs.Release("job-0001.attempt-0", 0);
    logs.Release("job-0001.attempt-0", 1);
    REQUIRE(logs.Size("job-0001.attempt-0", 0) == 0);
    REQUIRE(logs.Size("job-0001.attempt-0", 1) == 0);
  }
  LogStore again(dir.Path("jobs"), 100);
  REQUIRE(WholeLog(again, "job-0001.attempt-0", 0) == "small\n");
  // Kept, a node's such files would fill its disk.
  REQUIRE(again.Size("job-0001.attempt-0", 1) == 0);
  REQUIRE_FALSE(std::filesystem::exists(dir.Path("jobs/job-0001.attempt-0.rank-1.log")));
}

// On a full disk the head must not keep part of a log silently, with the
// job's end missing from `clusterctl logs`.
TEST_CASE("output a full disk refuses is marked where it is missing, and nothing half-written stays", "[logs]") {
  TempTree dir;
  LogStore logs(dir.Path("jobs"), 16);
  logs.Append("job-0001", 0, std::string(20, 'a'));  // past the limit: a file of its own
  REQUIRE(dir.Read("jobs/job-0001.rank-0.log") == std::string(20, 'a'));
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGXFSZ, &ignore, &old);
  rlimit was{};
  getrlimit(RLIMIT_FSIZE, &was);
  rlimit small = was;
  small.rlim_cur = 30;  // as a full disk would: the next 20 bytes do not fit
  setrlimit(RLIMIT_FSIZE, &small);
  logs.Append("job-0001", 0, std::string(20, 'b'));  // 10 of them would fit: none stays
  logs.Append("job-0001", 0, std::string(6, 'c'));
  setrlimit(RLIMIT_FSIZE, &was);
  sigaction(SIGXFSZ, &old, nullptr);
  REQUIRE(dir.Read("jobs/job-0001.rank-0.log") == std::string(20, 'a'));
  logs.Append("job-0001", 0, "end\n");
  REQUIRE(WholeLog(logs, "job-0001", 0) == std::string(20, 'a') +
                                               "[clusterd: 26 bytes of this log were lost here: cannot write " +
                                               dir.Path("jobs/job-0001.rank-0.log") + ": File too large]\nend\n");
}

TEST_CASE("a deleted job's logs go whether packed, moved or from before, and stay gone after a restart", "[logs]") {
  TempTree dir;
  dir.Write("jobs/job-0003/rank-0.log", "from an older head\n");
  {
    LogStore logs(dir.Path("jobs"), 100);
    logs.Append("job-0001", 0, "kept\n");
    logs.Append("job-0002", 0, "packed\n");
    logs.Append("job-0002", 1, std::string(200, 'm'));  // a file of its own
    REQUIRE(std::filesystem::exists(dir.Path("jobs/job-0002.rank-1.log")));
    logs.Delete("job-0002", 2);
    logs.Delete("job-0003", 1);
    REQUIRE(logs.Size("job-0002", 0) == 0);
    REQUIRE(logs.Size("job-0002", 1) == 0);
    REQUIRE(logs.Size("job-0003", 0) == 0);
    REQUIRE_FALSE(std::filesystem::exists(dir.Path("jobs/job-0002.rank-1.log")));
    REQUIRE_FALSE(std::filesystem::exists(dir.Path("jobs/job-0003")));
    REQUIRE(WholeLog(logs, "job-0001", 0) == "kept\n");
  }
  // Its packed bytes shared a pack with a kept log: a restarted head finds
  // them again and forgets them, as its journal no longer has the job.
  LogStore again(dir.Path("jobs"), 100);
  REQUIRE(again.Size("job-0002", 0) == 7);
  again.ForgetJobsExcept([](const std::string& job_id) { return job_id == "job-0001"; });
  REQUIRE(again.Size("job-0002", 0) == 0);
  REQUIRE(WholeLog(again, "job-0001", 0) == "kept\n");
}

TEST_CASE("clusterctl delete takes the job's logs with it, and a restarted head does not bring them back",
          "[jobs][logs]") {
  QuietLogs quiet;
  LogsHarness h;
  for (int rank = 0; rank < 2; ++rank) {
    AgentMessage exit;
    exit.mutable_rank_exited()->set_job_id(h.id);
    exit.mutable_rank_exited()->set_rank(rank);
    h.head->OnAgentMessage(h.agent, exit);
  }
  REQUIRE(h.head->jobs().Get(h.id)->state() == SUCCEEDED);
  REQUIRE(h.logs.Size(h.id, 1) > 0);
  REQUIRE(h.head->jobs().Delete(h.id).ok());
  REQUIRE(h.logs.Size(h.id, 1) == 0);

  LogStore logs(h.dir.Path("jobs"));
  REQUIRE(logs.Size(h.id, 1) > 0);  // its record is still in the pack being written
  HeadCore restarted(&h.clock, h.config, &h.store, &logs);
  REQUIRE(restarted.Restore().ok());
  REQUIRE(logs.Size(h.id, 1) == 0);
}

TEST_CASE("LogStore still reads and extends a job folder from before", "[logs]") {
  TempTree dir;
  dir.Write("jobs/job-0001/rank-1.log", "--- attempt 0 on a ---\nold\n");  // written by an older head
  LogStore logs(dir.Path("jobs"));
  REQUIRE(WholeLog(logs, "job-0001", 1) == "--- attempt 0 on a ---\nold\n");
  logs.Append("job-0001", 1, "more\n");
  REQUIRE(dir.Read("jobs/job-0001/rank-1.log") == "--- attempt 0 on a ---\nold\nmore\n");
  REQUIRE(logs.Tail("job-0001", 1, 1) == "more");
  logs.Append("job-0002", 0, "new\n");
  REQUIRE_FALSE(std::filesystem::exists(dir.Path("jobs/job-0002")));  // no folder per job
  REQUIRE(logs.Size("job-0002", 0) == 4);
}

TEST_CASE("LogStore finds the last attempt banner at a line's start, however much output follows it", "[logs]") {
  TempTree dir;
  LogStore logs(dir.Path("jobs"));
  REQUIRE(logs.LastAttempt("job-0001", 0) == -1);  // no log yet
  logs.Append("job-0001", 0, "--- attempt 0 on a ---\nepoch 0\n--- attempt 1 on b ---\n");
  REQUIRE(logs.LastAttempt("job-0001", 0) == 1);
  logs.Append("job-0001", 0, "printed --- attempt 7 on c ---\n");  // not at a line's start
  REQUIRE(logs.LastAttempt("job-0001", 0) == 1);
  // A banner at every position around the 64 KiB chunk edge, then more output.
  for (int pad = 65536 - 40; pad < 65536 + 40; pad += 7) {
    TempTree other;
    LogStore around(other.Path("jobs"));
    around.Append("job-0002", 0, std::string(pad, 'x') + "\n--- attempt 3 on w-1 ---\n" + std::string(200000, 'y'));
    INFO("banner after " << pad << " bytes");
    REQUIRE(around.LastAttempt("job-0002", 0) == 3);
  }
  logs.Append("job-0003", 0, std::string(300000, 'z') + "\n");
  REQUIRE(logs.LastAttempt("job-0003", 0) == -1);
}

TEST_CASE("a head restarted mid-attempt does not write the attempt's banner into a rank's log again", "[jobs][logs]") {
  TempTree dir;
  std::string id;
  MemoryJobStore store;
  Config config;
  auto log_from = [&](HeadCore& head, const std::shared_ptr<FakeAgentConnection>& conn, int rank,
                      const std::string& data) {
    AgentMessage log;
    log.mutable_log()->set_job_id(id);
    log.mutable_log()->set_attempt(0);
    log.mutable_log()->set_rank(rank);
    log.mutable_log()->set_data(data);
    head.OnAgentMessage(conn, log);
  };
  {
    Harness h(nullptr, dir.Path("jobs"));
    h.AddNode("a", 2);
    id = h.Submit(2, 1, PACK, 1);
    h.AnswerPort("a", 1000);
    log_from(*h.head, h.agents["a"], 0, "epoch 0\n");
    store = h.store;
    config = h.config;
  }
  FakeClock clock;
  LogStore logs(dir.Path("jobs"));
  HeadCore head(&clock, config, &store, &logs);
  REQUIRE(head.Restore().ok());
  auto conn = std::make_shared<FakeAgentConnection>();
  AgentMessage m = RegisterAgain("a", 2, id, {0, 1});
  head.OnAgentMessage(conn, m);
  log_from(head, conn, 0, "epoch 1\n");
  log_from(head, conn, 1, "first words\n");
  REQUIRE(WholeLog(logs, id, 0) == "--- attempt 0 on a ---\nepoch 0\nepoch 1\n");
  REQUIRE(WholeLog(logs, id, 1) == "--- attempt 0 on a ---\nfirst words\n");
}

// A rank whose launch failed (a restore) must not be shown with the earlier
// output of its log as its own last lines.
TEST_CASE("a rank that could not start is not quoted with the lines its log already had", "[jobs][logs]") {
  QuietLogs quiet;
  // Rank 1 ends as `exit` says, rank 0 as stopped after it: the job's reason.
  auto reason_after = [](LogsHarness& h, RankExited exit) {
    AgentMessage first, second;
    exit.set_job_id(h.id);
    exit.set_rank(1);
    *first.mutable_rank_exited() = exit;
    h.head->OnAgentMessage(h.agent, first);
    second.mutable_rank_exited()->set_job_id(h.id);
    second.mutable_rank_exited()->set_signal(15);
    h.head->OnAgentMessage(h.agent, second);
    return h.head->jobs().Get(h.id)->reason();
  };
  RankExited failed;  // rank 1's log holds "hello" from before
  failed.set_exit_code(127);
  failed.set_error("restoring checkpoint checkpoint_000002: gone");
  LogsHarness h;
  CHECK(reason_after(h, failed) ==
        "rank 1 could not start: restoring checkpoint checkpoint_000002: gone on node a (attempt 0)");
  // One that ran and failed still is.
  failed.clear_error();
  LogsHarness ran;
  CHECK(reason_after(ran, failed) ==
        "rank 1 exited with code 127 on node a (attempt 0); last log lines:\n--- attempt 0 on a ---\nhello");
}
