// What clients read comes in bounded replies: ListJobs and GetMetrics in
// pages (a count and a byte budget), GetLogs in a byte budget the ranks
// share by turns. Tokens from clients are checked.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "head_harness.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

ListJobsReply Page(Harness& h, int size, const std::string& token) {
  ListJobsRequest request;
  request.set_page_size(size);
  request.set_page_token(token);
  auto reply = h.head->jobs().ListPage(request);
  REQUIRE(reply.ok());
  return *reply;
}

MetricsReply MetricsPage(Harness& h, const std::string& id, int size, const std::string& token) {
  JobRequest request;
  request.set_job_id(id);
  request.set_page_size(size);
  request.set_page_token(token);
  auto reply = h.head->jobs().Metrics(request);
  REQUIRE(reply.ok());
  return *reply;
}

}  // namespace

TEST_CASE("ListJobs comes in pages of page_size (default 100, at most 1000) that follow each other", "[jobs][pages]") {
  QuietLogs quiet;
  Harness h;
  for (int i = 0; i < 1205; ++i) h.Submit(1, 1, PACK);  // no node: all wait
  ListJobsReply first = Page(h, 0, "");
  REQUIRE(first.jobs_size() == JobManager::kJobsPage);
  REQUIRE(first.jobs(0).job_id() == "job-0001");
  REQUIRE(first.next_page_token() == "job-0100");
  REQUIRE(Page(h, 0, first.next_page_token()).jobs(0).job_id() == "job-0101");
  REQUIRE(Page(h, 5000, "").jobs_size() == JobManager::kMaxJobsPage);

  std::vector<std::string> ids;
  std::string token;
  do {
    ListJobsReply page = Page(h, 7, token);
    REQUIRE(page.jobs_size() <= 7);
    for (const auto& job : page.jobs()) ids.push_back(job.job_id());
    token = page.next_page_token();
  } while (!token.empty());
  REQUIRE(ids.size() == 1205);
  REQUIRE(ids.back() == "job-1205");

  // The token's job deleted between pages: the next page starts after it all the same.
  REQUIRE(h.head->jobs().Stop("job-0008").ok());
  REQUIRE(h.head->jobs().Delete("job-0008").ok());
  REQUIRE(Page(h, 3, "job-0008").jobs(0).job_id() == "job-0009");

  for (const char* bad : {"job-", "0008", "job-12x", "../etc"}) {
    ListJobsRequest request;
    request.set_page_token(bad);
    REQUIRE(h.head->jobs().ListPage(request).status().code() == Status::Code::kInvalidArgument);
  }
}

// Ids carry the cluster's id ("job-0100-3f9a2c"): a page token check that
// took only the bare form would fail `clusterctl jobs` on any cluster of
// more than 100 jobs ("'job-0100-...' is not a page token").
TEST_CASE("ListJobs pages follow each other with ids that carry the cluster id", "[jobs][pages]") {
  QuietLogs quiet;
  Harness h;
  h.head->jobs().set_cluster_id("3f9a2c");
  for (int i = 0; i < 150; ++i) h.Submit(1, 1, PACK);
  ListJobsReply first = Page(h, 0, "");
  REQUIRE(first.next_page_token() == "job-0100-3f9a2c");
  ListJobsReply second = Page(h, 0, first.next_page_token());
  REQUIRE(second.jobs_size() == 50);
  REQUIRE(second.jobs(0).job_id() == "job-0101-3f9a2c");
  REQUIRE(second.next_page_token().empty());
  // The token's job deleted between pages: the next page starts after it all the same.
  REQUIRE(h.head->jobs().Stop("job-0100-3f9a2c").ok());
  REQUIRE(h.head->jobs().Delete("job-0100-3f9a2c").ok());
  REQUIRE(Page(h, 0, "job-0100-3f9a2c").jobs(0).job_id() == "job-0101-3f9a2c");
  // Still refused: what is no job id of either form.
  ListJobsRequest bad;
  for (const char* token : {"job-0100-", "job-x", "0100", "job-0100x"}) {
    bad.set_page_token(token);
    REQUIRE_FALSE(h.head->jobs().ListPage(bad).ok());
  }
}

TEST_CASE("a page of jobs stops at about 4 MiB, but holds one job however large", "[jobs][pages]") {
  QuietLogs quiet;
  Harness h;
  SubmitJobRequest big = h.Request(1, 1, PACK);
  big.mutable_spec()->set_config_json("{\"blob\":\"" + std::string(900 * 1024, 'x') + "\"}");
  for (int i = 0; i < 10; ++i) REQUIRE(h.head->jobs().Submit(big).ok());
  ListJobsReply page = Page(h, 0, "");
  REQUIRE(page.jobs_size() == 4);
  REQUIRE(page.ByteSizeLong() <= JobManager::kMaxReplyBytes + 1024);
  int total = 0;
  for (std::string token = ""; ; ) {
    ListJobsReply next = Page(h, 0, token);
    REQUIRE(next.jobs_size() >= 1);
    total += next.jobs_size();
    token = next.next_page_token();
    if (token.empty()) break;
  }
  REQUIRE(total == 10);
}

TEST_CASE("GetMetrics comes in pages of at most 10000 records and about 4 MiB", "[jobs][pages]") {
  QuietLogs quiet;
  Harness h;
  // Every record kept (no job_metrics_max_records or _mb): pages, not thinning, are tried here.
  h.config.job_metrics_max_records = 0;
  h.config.job_metrics_max_mb = 0;
  h.head = std::make_unique<HeadCore>(&h.clock, h.config, &h.store, &h.logs, nullptr);
  h.AddNode("a", 1);
  std::string id = h.Submit(1, 1, PACK);
  h.AnswerPort("a", 1000);
  for (int i = 0; i < 25'000; ++i) {
    AgentMessage m;
    m.mutable_metrics()->set_job_id(id);
    m.mutable_metrics()->set_rank(0);
    (*m.mutable_metrics()->mutable_values())["loss"] = i;
    h.From("a", m);
  }
  MetricsReply first = MetricsPage(h, id, 0, "");
  REQUIRE(first.records_size() == JobManager::kMetricsPage);
  REQUIRE(first.next_page_token() == "10000");
  MetricsReply second = MetricsPage(h, id, 0, first.next_page_token());
  REQUIRE(second.records(0).index() == 10'000);
  MetricsReply last = MetricsPage(h, id, 100'000, "20000");
  REQUIRE(last.records_size() == 5000);
  REQUIRE(last.next_page_token().empty());
  REQUIRE(MetricsPage(h, id, 0, "25000").records_size() == 0);
  for (const char* bad : {"-1", "25001", "abc", "10000x", "99999999999999999999"}) {
    JobRequest request;
    request.set_job_id(id);
    request.set_page_token(bad);
    REQUIRE(h.head->jobs().Metrics(request).status().code() == Status::Code::kInvalidArgument);
  }

  // Reports with many values fill the byte budget before the count.
  std::string wide = h.Submit(1, 1, PACK);
  h.Exit("a", id, 0, 0, 0);
  h.AnswerPort("a", 1001);
  for (int i = 0; i < 3000; ++i) {
    AgentMessage m;
    m.mutable_metrics()->set_job_id(wide);
    m.mutable_metrics()->set_rank(0);
    for (int v = 0; v < 100; ++v) (*m.mutable_metrics()->mutable_values())["metric_number_" + std::to_string(v)] = v;
    h.From("a", m);
  }
  MetricsReply page = MetricsPage(h, wide, 0, "");
  REQUIRE(page.records_size() < 3000);
  REQUIRE_FALSE(page.next_page_token().empty());
  REQUIRE(page.ByteSizeLong() <= JobManager::kMaxReplyBytes + 4096);
}

TEST_CASE("GetLogs reads at most its byte budget over all ranks, and ranks take turns", "[jobs][pages][logs]") {
  TempTree dir;
  FakeClock clock;
  MemoryJobStore store;
  LogStore logs{dir.Path("jobs")};
  Config config;
  HeadCore head(&clock, config, &store, &logs);
  auto agent = std::make_shared<FakeAgentConnection>();
  AgentMessage reg;
  reg.mutable_register_()->set_name("a");
  reg.mutable_register_()->set_address("10.0.0.1");
  (*reg.mutable_register_()->mutable_total()->mutable_amounts())[kCpu] = 3;
  head.OnAgentMessage(agent, reg);
  Harness shape;
  std::string id = *head.jobs().Submit(shape.Request(3, 1, PACK));
  std::map<int, int64_t> size;
  for (int rank = 0; rank < 3; ++rank) {
    for (int i = 0; i < 6; ++i) {  // 3 MiB a rank, and a banner
      AgentMessage log;
      log.mutable_log()->set_job_id(id);
      log.mutable_log()->set_rank(rank);
      log.mutable_log()->set_data(std::string(512 * 1024, static_cast<char>('a' + rank)));
      head.OnAgentMessage(agent, log);
    }
  }

  LogsRequest request;
  request.set_job_id(id);
  request.set_rank(-1);
  request.set_max_bytes(int64_t{1} << 40);  // asks for far more than the head gives
  auto big = head.jobs().Logs(request);
  REQUIRE(big.ok());
  size_t bytes = 0;
  for (const auto& chunk : big->chunks()) bytes += chunk.data().size();
  REQUIRE(bytes == JobManager::kMaxReplyBytes);

  // As clusterctl follows: offsets and start_rank from each reply.
  request.set_max_bytes(0);  // the default, 1 MiB
  std::map<int, int64_t> offsets;
  std::map<int, int> turns;  // replies in which each rank got data
  int calls = 0;
  for (bool got = true; got; ++calls) {
    LogsReply reply = *head.jobs().Logs(request);
    got = reply.chunks_size() > 0;
    size_t in_reply = 0;
    for (const auto& chunk : reply.chunks()) {
      REQUIRE(chunk.end_offset() == offsets[chunk.rank()] + static_cast<int64_t>(chunk.data().size()));
      offsets[chunk.rank()] = chunk.end_offset();
      (*request.mutable_offsets())[chunk.rank()] = chunk.end_offset();
      in_reply += chunk.data().size();
      ++turns[chunk.rank()];
    }
    REQUIRE(in_reply <= static_cast<size_t>(JobManager::kLogsReplyBytes));
    request.set_start_rank(reply.next_rank());
    // Nobody waits for all of another rank's 3 MiB: each gets a turn within three replies.
    if (calls == 2) REQUIRE(turns.size() == 3);
  }
  for (int rank = 0; rank < 3; ++rank) REQUIRE(offsets[rank] > 3 * 512 * 1024 * 2);
  REQUIRE(calls <= 12);
}

TEST_CASE("ListJobs with states_only gives each job's id and state and nothing else, in the same pages", "[jobs][pages]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 1);
  const std::string running = h.Submit(1, 1, PACK);
  for (int i = 0; i < 150; ++i) h.Submit(1, 1, PACK);  // one slot: these wait
  ListJobsRequest request;
  request.set_states_only(true);
  auto brief = h.head->jobs().ListPage(request);
  REQUIRE(brief.ok());
  REQUIRE(brief->jobs_size() == JobManager::kJobsPage);
  REQUIRE(brief->next_page_token() == Page(h, 0, "").next_page_token());
  REQUIRE(brief->jobs(0).job_id() == running);
  REQUIRE(brief->jobs(0).state() == RUNNING);
  REQUIRE(brief->jobs(1).state() == PENDING);
  JobInfo expected;
  expected.set_job_id(running);
  expected.set_state(RUNNING);
  REQUIRE(brief->jobs(0).SerializeAsString() == expected.SerializeAsString());  // no spec, no attempts
  REQUIRE(Page(h, 0, "").jobs(0).spec().num_workers() == 1);  // the full record otherwise
}

namespace {

ListJobsReply GroupedPage(JobManager& jobs, int size, const std::string& token, const std::string& array_id = "") {
  ListJobsRequest request;
  request.set_page_size(size);
  request.set_page_token(token);
  request.set_array_id(array_id);
  request.set_group_arrays(true);
  auto reply = jobs.ListPage(request);
  REQUIRE(reply.ok());
  return *reply;
}

std::map<JobState, int> Counts(const ArrayStates& states) {
  std::map<JobState, int> out;
  for (const JobStateCount& entry : states.counts()) out[entry.state()] = entry.count();
  return out;
}

}  // namespace

// `clusterctl jobs` on a head that ran an array of 100,000 fetched every
// one of its records (3.4 s) to print one row.
TEST_CASE("ListJobs grouped gives an array as its first job with its jobs counted by state, once over all pages", "[jobs][pages][array]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 2);
  const std::string before = h.Submit(1, 1, PACK);
  SubmitJobRequest array = h.Request(1, 1, PACK);
  array.mutable_spec()->mutable_array()->set_count(5);
  auto array_id = h.head->jobs().Submit(array);
  REQUIRE(array_id.ok());
  const std::string after = h.Submit(1, 1, PACK);

  // One node of 2 CPUs: `before` and the array's first run, the rest wait.
  ListJobsReply first = GroupedPage(h.head->jobs(), 2, "");
  REQUIRE(first.jobs_size() == 2);
  CHECK(first.jobs(0).job_id() == before);
  CHECK(first.jobs(1).job_id() == *array_id);
  REQUIRE(first.arrays_size() == 1);
  CHECK(first.arrays(0).array_id() == *array_id);
  CHECK(Counts(first.arrays(0)) == std::map<JobState, int>{{PENDING, 4}, {RUNNING, 1}});
  // The next page goes on past the array's other jobs, counted already.
  ListJobsReply second = GroupedPage(h.head->jobs(), 2, first.next_page_token());
  REQUIRE(second.jobs_size() == 1);
  CHECK(second.jobs(0).job_id() == after);
  CHECK(second.arrays_size() == 0);
  CHECK(second.next_page_token().empty());

  // Counts follow the jobs; the first one ended, the array is still listed by it.
  h.AnswerPort("a", 29500);
  h.Exit("a", *array_id, 0, 0, 0);
  ListJobsReply all = GroupedPage(h.head->jobs(), 0, "");
  REQUIRE(all.jobs_size() == 3);
  REQUIRE(all.arrays_size() == 1);
  CHECK(Counts(all.arrays(0)) == std::map<JobState, int>{{PENDING, 3}, {RUNNING, 1}, {SUCCEEDED, 1}});

  // With array_id: that array alone, as one job and its counts.
  ListJobsReply one = GroupedPage(h.head->jobs(), 0, "", *array_id);
  REQUIRE(one.jobs_size() == 1);
  CHECK(one.jobs(0).job_id() == *array_id);
  REQUIRE(one.arrays_size() == 1);
  CHECK(Counts(one.arrays(0)) == Counts(all.arrays(0)));

  // Not grouped, as before: every job, no counts.
  ListJobsReply flat = Page(h, 0, "");
  CHECK(flat.jobs_size() == 7);
  CHECK(flat.arrays_size() == 0);
}

// A restarted head ordered its jobs by submit time, then by id as text,
// where "job-10000" comes before "job-9999": an array across that number
// came apart around a job submitted in the same millisecond.
TEST_CASE("a restarted head lists jobs by number past job-9999 and keeps an array's jobs together", "[jobs][pages][array][journal]") {
  QuietLogs quiet;
  Harness h;  // no node: every job waits, all in the same fake millisecond
  h.Submit(1, 1, PACK);
  SubmitJobRequest array = h.Request(1, 1, PACK);
  array.mutable_spec()->mutable_array()->set_count(10000);
  auto array_id = h.head->jobs().Submit(array);
  REQUIRE(array_id.ok());
  const std::string last = h.Submit(1, 1, PACK);
  REQUIRE(last == "job-10002");

  FakeClock clock2;
  LogStore logs("");
  HeadCore restarted(&clock2, h.config, &h.store, &logs);
  REQUIRE(restarted.Restore().ok());
  ListJobsReply grouped = GroupedPage(restarted.jobs(), 0, "");
  REQUIRE(grouped.jobs_size() == 3);
  CHECK(grouped.jobs(0).job_id() == "job-0001");
  CHECK(grouped.jobs(1).job_id() == *array_id);
  CHECK(grouped.jobs(2).job_id() == last);
  REQUIRE(grouped.arrays_size() == 1);
  CHECK(Counts(grouped.arrays(0)).begin()->second == 10000);

  std::vector<std::string> ids;
  ListJobsRequest request;
  request.set_page_size(1000);
  do {
    auto page = restarted.jobs().ListPage(request);
    REQUIRE(page.ok());
    for (const auto& job : page->jobs()) ids.push_back(job.job_id());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  REQUIRE(ids.size() == 10002);
  CHECK(ids[9998] == "job-9999");
  CHECK(ids[9999] == "job-10000");
}

TEST_CASE("GetMetrics with latest_only gives the newest record alone, and none before the first", "[jobs][pages][top]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 1);
  std::string id = h.Submit(1, 1, PACK);
  h.AnswerPort("a", 1000);
  JobRequest request;
  request.set_job_id(id);
  request.set_latest_only(true);
  auto none = h.head->jobs().Metrics(request);
  REQUIRE(none.ok());
  CHECK(none->records_size() == 0);
  for (int i = 0; i < 30; ++i) {
    AgentMessage m;
    m.mutable_metrics()->set_job_id(id);
    m.mutable_metrics()->set_rank(0);
    (*m.mutable_metrics()->mutable_values())["loss"] = i;
    h.From("a", m);
  }
  auto latest = h.head->jobs().Metrics(request);
  REQUIRE(latest.ok());
  REQUIRE(latest->records_size() == 1);
  CHECK(latest->records(0).index() == 29);
  CHECK(latest->records(0).values().at("loss") == 29);
  CHECK(latest->next_page_token().empty());
  request.set_job_id("job-9999");
  CHECK(h.head->jobs().Metrics(request).status().code() == Status::Code::kNotFound);
}
