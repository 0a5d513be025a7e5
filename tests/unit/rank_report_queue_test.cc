// RankReportQueue (daemon/agent/rank_report_queue.h): what the rank runner
// tells the head, kept in order while the link refuses it.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "daemon/agent/rank_report_queue.h"

using namespace clusterd;

namespace {

// A link that takes messages while `up`, and the exits whose logs are not shipped.
struct Link {
  bool up = true;
  std::vector<AgentMessage> sent;
  std::set<int> log_waits;  // ranks whose exits wait for their logs
  RankReportQueue queue{[this](const AgentMessage& m) {
                          if (!up) return false;
                          sent.push_back(m);
                          return true;
                        },
                        [this](const AgentMessage& m) {
                          return m.has_rank_exited() && log_waits.count(m.rank_exited().rank()) > 0;
                        }};
};

AgentMessage Exit(int rank) {
  AgentMessage m;
  m.mutable_rank_exited()->set_job_id("job-1");
  m.mutable_rank_exited()->set_rank(rank);
  return m;
}

AgentMessage Metrics(int step) {
  AgentMessage m;
  (*m.mutable_metrics()->mutable_values())["step"] = step;
  return m;
}

}  // namespace

TEST_CASE("what must reach the head is kept while the link refuses it and sent in order once it takes again",
          "[rank_report_queue]") {
  Link link;
  link.up = false;
  link.queue.Report(Exit(0));
  AgentMessage log;
  log.mutable_log()->set_job_id("job-1");
  CHECK_FALSE(link.queue.SendUnkept(log));  // not kept: the runner sends its logs again itself
  link.queue.Report(Exit(1));
  CHECK(link.queue.kept() == 2);
  link.up = true;
  link.queue.Flush();
  REQUIRE(link.sent.size() == 2);
  CHECK(link.sent[0].rank_exited().rank() == 0);
  CHECK(link.sent[1].rank_exited().rank() == 1);
  CHECK(link.queue.kept() == 0);
}

TEST_CASE("an exit waits behind its rank's log, and the others do not wait for it", "[rank_report_queue]") {
  Link link;
  link.log_waits = {0};
  link.queue.ReportKept(Exit(0));
  link.queue.ReportKept(Exit(1));
  REQUIRE(link.sent.size() == 1);
  CHECK(link.sent[0].rank_exited().rank() == 1);
  link.queue.Flush();
  CHECK(link.sent.size() == 1);  // still waiting for its log
  link.log_waits.clear();
  link.queue.Flush();
  REQUIRE(link.sent.size() == 2);
  CHECK(link.sent[1].rank_exited().rank() == 0);
}

TEST_CASE("a rank's reports are numbered, never pass the kept ones, and past the limit the newest is refused",
          "[rank_report_queue]") {
  Link link;
  int64_t seq = 0;
  REQUIRE(link.queue.ReportMetrics(Metrics(1), &seq).ok());
  CHECK(link.sent.back().metrics().report_seq() == 1);
  link.up = false;
  for (int step = 2; step < 2 + static_cast<int>(RankReportQueue::kMaxKeptReports); ++step) {
    REQUIRE(link.queue.ReportMetrics(Metrics(step), &seq).ok());
  }
  Status refused = link.queue.ReportMetrics(Metrics(0), &seq);
  CHECK(link.queue.kept() == RankReportQueue::kMaxKeptReports);
  CHECK(refused.code() == Status::Code::kUnavailable);
  CHECK(refused.message().find("not kept") != std::string::npos);
  // The head is back: what was kept goes, in order, then the next report.
  link.up = true;
  link.queue.Flush();
  CHECK(link.queue.kept() == 0);
  REQUIRE(link.queue.ReportMetrics(Metrics(99), &seq).ok());
  REQUIRE(link.sent.size() == 2 + RankReportQueue::kMaxKeptReports);
  bool in_order = true;
  for (size_t i = 0; i < link.sent.size(); ++i) in_order &= link.sent[i].metrics().report_seq() == static_cast<int64_t>(i + 1);
  CHECK(in_order);
}
