// A job's metric reports at the head: bounded in count and bytes, thinned
// every 2nd at a time with each rank's latest report kept, and taken at a
// cost that does not grow with the reports before.
#include <catch2/catch.hpp>

#include <time.h>

#include <vector>

#include "daemon/head/job_metrics.h"
#include "head_harness.h"
#include "sweep_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// A head whose config the test set first.
struct MetricsHarness : Harness {
  explicit MetricsHarness(int64_t max_records, int64_t max_mb = 0) {
    config.job_metrics_max_records = max_records;
    config.job_metrics_max_mb = max_mb;
    head = std::make_unique<HeadCore>(&clock, config, &store, &logs, nullptr);
  }

  std::string job;

  void Start(int workers) {
    for (int n = 0; n < workers; ++n) AddNode(std::string(1, static_cast<char>('a' + n)), 1);
    job = Submit(workers, 1, STRICT_SPREAD);
    AnswerPort("a", 1);
  }

  void Report(const std::string& node, int rank, int64_t seq, double loss, int extra_metrics = 0) {
    AgentMessage m;
    m.mutable_metrics()->set_job_id(job);
    m.mutable_metrics()->set_rank(rank);
    m.mutable_metrics()->set_report_seq(seq);
    (*m.mutable_metrics()->mutable_values())["loss"] = loss;
    for (int i = 0; i < extra_metrics; ++i) {
      (*m.mutable_metrics()->mutable_values())["metric_with_a_longish_name_" + std::to_string(i)] = i;
    }
    From(node, m);
  }

  std::vector<MetricRecord> Records() {
    std::vector<MetricRecord> out;
    JobRequest request;
    request.set_job_id(job);
    for (;;) {
      auto reply = head->jobs().Metrics(request);
      REQUIRE(reply.ok());
      out.insert(out.end(), reply->records().begin(), reply->records().end());
      if (reply->next_page_token().empty()) return out;
      request.set_page_token(reply->next_page_token());
    }
  }
};

std::vector<int64_t> Indexes(const std::vector<MetricRecord>& records) {
  std::vector<int64_t> out;
  for (const MetricRecord& r : records) out.push_back(r.index());
  return out;
}

int64_t ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

}  // namespace

TEST_CASE("a job's reports past job_metrics_max_records are thinned every 2nd, oldest first, the latest kept",
          "[metrics_bound]") {
  QuietLogs quiet;
  MetricsHarness h(8);
  h.Start(1);
  for (int i = 0; i < 20; ++i) h.Report("a", 0, i + 1, i);
  std::vector<MetricRecord> records = h.Records();
  // Thinned at the 9th report (1, 3, 5 went), at the 12th, the 15th and
  // the 18th: the older part coarser, the newest dense; `index` keeps each
  // report's number, so the gaps show what went.
  REQUIRE(Indexes(records) == std::vector<int64_t>{0, 10, 13, 15, 16, 17, 18, 19});
  for (const MetricRecord& r : records) REQUIRE(r.values().at("loss") == static_cast<double>(r.index()));
  // A report sent again after thinning is still known as taken.
  h.Report("a", 0, 20, 19);
  h.Report("a", 0, 3, 2);
  REQUIRE(h.Records().size() == 8);
  REQUIRE(h.Records().back().index() == 19);
}

TEST_CASE("thinning keeps each rank's latest report of the newest attempt", "[metrics_bound]") {
  QuietLogs quiet;
  MetricsHarness h(6);
  h.Start(2);
  // Rank 1 reports once, early; rank 0 many times after.
  h.Report("b", 1, 1, 100);
  for (int i = 0; i < 30; ++i) h.Report("a", 0, i + 1, i);
  std::vector<MetricRecord> records = h.Records();
  REQUIRE(records.size() <= 6);
  bool rank1_kept = false;
  for (const MetricRecord& r : records) rank1_kept |= r.rank() == 1 && r.values().at("loss") == 100;
  REQUIRE(rank1_kept);
  REQUIRE(records.back().rank() == 0);
  REQUIRE(records.back().values().at("loss") == 29);
  REQUIRE(records.back().index() == 30);  // the attempt's 31st report
}

TEST_CASE("a job's reports stay within job_metrics_max_mb", "[metrics_bound]") {
  QuietLogs quiet;
  MetricsHarness h(0, 1);  // no bound in count, 1 MiB
  h.Start(1);
  for (int i = 0; i < 200; ++i) h.Report("a", 0, i + 1, i, 500);
  std::vector<MetricRecord> records = h.Records();
  size_t bytes = 0;
  for (const MetricRecord& r : records) bytes += r.ByteSizeLong();
  INFO(records.size() << " records, " << bytes << " bytes");
  REQUIRE(bytes <= (1u << 20));
  REQUIRE(records.size() < 200);
  REQUIRE(records.back().values().at("loss") == 199);
}

TEST_CASE("thinning walks the records once per half of the bound, not once per report", "[metrics_bound]") {
  std::vector<MetricRecord> records;
  MetricTally tally;
  tally.Build(records);
  for (int i = 0; i < 10000; ++i) {
    MetricRecord record;
    record.set_index(i);
    record.set_report_seq(i + 1);
    ThinMetrics(&records, &tally, static_cast<int64_t>(record.ByteSizeLong()), 1000, 0);
    tally.Appended(record, static_cast<int64_t>(record.ByteSizeLong()));
    records.push_back(record);
  }
  REQUIRE(records.size() <= 1000);
  REQUIRE(records.back().index() == 9999);
  // Each thinning walks at most 1000 records and leaves room for 500 more.
  INFO(tally.visited);
  REQUIRE(tally.visited <= 10000 / 500 * 1000);
}

TEST_CASE("a report costs the head the same after 60,000 reports as after none", "[metrics_bound]") {
  QuietLogs quiet;
  MetricsHarness h(1'000'000);  // no thinning: every record stays
  h.Start(1);
  auto batch = [&](int64_t first) {
    const int64_t start = ThreadCpuMicros();
    for (int64_t i = first; i < first + 2000; ++i) h.Report("a", 0, i + 1, 0.5);
    return ThreadCpuMicros() - start;
  };
  const int64_t early = batch(0);
  for (int64_t first = 2000; first < 60000; first += 2000) batch(first);
  const int64_t late = batch(60000);
  INFO("first 2,000 reports: " << early << " us of CPU; 2,000 after 60,000: " << late << " us");
  // A walk over the records per report made the late batch many times the
  // early one; the bound is generous for a busy machine.
  REQUIRE(late < 3 * early + 20'000);
}

TEST_CASE("a sweep counts every report of its trial while the trial's records are thinned", "[metrics_bound][sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  h.config.job_metrics_max_records = 4;
  h.Restart();
  h.AddNode("a", 1);
  auto id = h.head->sweeps().Submit(PlainSweepSubmit(1, 1));
  REQUIRE(id.ok());
  const std::string trial = h.Sweep(*id).trials(0).job_id();
  h.AnswerPort("a", 1000);
  h.Start("a", trial);
  for (int i = 0; i < 20; ++i) h.Report("a", trial, i / 100.0);
  const SweepInfo sweep = h.Sweep(*id);
  REQUIRE(h.head->jobs().MetricsOf(trial)->size() <= 4);
  REQUIRE(sweep.trials(0).iterations() == 20);
  REQUIRE(sweep.trials(0).metric() == Approx(0.19));
}
