// JobQueries on its own over a job table: what a client reads comes in
// bounded replies. The list and a job's metrics in pages bounded by a count
// and a byte budget (at least one item each), a page token that continues
// exactly where the last page ended (also when that job was deleted
// since), logs in a byte budget the ranks take turns at, and every token,
// rank and offset a client sends checked, the refusal naming it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/logs/log_store.h"
#include "daemon/head/job_adoption.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_placement.h"
#include "daemon/head/job_queries.h"
#include "job_table_fixture.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

struct QueriesFixture : JobConcernsFixture {
  JobAdoption adoption{&clock, config, AdoptionParts(), Send(), [] {}};
  JobAttempts attempts{&clock, config, AttemptParts(&adoption), [this] { placement.Schedule(); }};
  JobPlacement placement{&table, &nodes, &infeasible, &arrays, &attempts};
  TempTree dir;
  LogStore rank_logs{dir.Path("logs")};
  JobQueries queries{&table, &placement, &arrays, &retention, &rank_logs};

  // The ids of a page's jobs.
  static std::vector<std::string> Ids(const ListJobsReply& page) {
    std::vector<std::string> ids;
    for (const JobInfo& job : page.jobs()) ids.push_back(job.job_id());
    return ids;
  }
  ListJobsReply Page(int size, const std::string& token = "") {
    ListJobsRequest request;
    request.set_page_size(size);
    request.set_page_token(token);
    auto page = queries.ListPage(request);
    REQUIRE(page.ok());
    return *page;
  }
};

}  // namespace

TEST_CASE("the job list comes in pages of page_size, and a page token goes on exactly after the page it ended",
          "[jobs][queries][pages]") {
  QueriesFixture f;
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(f.Add(SUCCEEDED).info.job_id());
  ListJobsReply first = f.Page(2);
  REQUIRE(QueriesFixture::Ids(first) == std::vector<std::string>{ids[0], ids[1]});
  REQUIRE(first.next_page_token() == ids[1]);
  ListJobsReply second = f.Page(2, first.next_page_token());
  REQUIRE(QueriesFixture::Ids(second) == std::vector<std::string>{ids[2], ids[3]});
  // The token's job is deleted meanwhile: the next page starts after it all the same.
  REQUIRE(f.table.Remove(*f.table.Find(ids[3]), "deleted by a test").ok());
  ListJobsReply last = f.Page(2, second.next_page_token());
  REQUIRE(QueriesFixture::Ids(last) == std::vector<std::string>{ids[4]});
  REQUIRE(last.next_page_token().empty());
  REQUIRE(f.Page(0).jobs_size() == 4);  // the default page holds them all

  ListJobsRequest bad;
  bad.set_page_token("yesterday");
  auto refused = f.queries.ListPage(bad);
  REQUIRE(refused.status().code() == Status::Code::kInvalidArgument);
  REQUIRE(refused.status().message() == "'yesterday' is not a page token of ListJobs");
}

TEST_CASE("a page of jobs stays within the reply's byte budget, yet holds one job however large",
          "[jobs][queries][pages]") {
  QueriesFixture f;
  const std::string reason(JobQueries::kMaxReplyBytes * 3 / 8, 'r');  // 1.5 MiB each
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    TrackedJob& job = f.Add();
    f.table.SetState(job, FAILED, reason);
    ids.push_back(job.info.job_id());
  }
  TrackedJob& huge = f.Add();
  f.table.SetState(huge, FAILED, std::string(JobQueries::kMaxReplyBytes + 1, 'h'));

  ListJobsReply first = f.Page(100);
  REQUIRE(QueriesFixture::Ids(first) == std::vector<std::string>{ids[0], ids[1]});
  REQUIRE(first.next_page_token() == ids[1]);
  ListJobsReply second = f.Page(100, first.next_page_token());
  REQUIRE(QueriesFixture::Ids(second) == std::vector<std::string>{ids[2]});
  ListJobsReply alone = f.Page(100, second.next_page_token());
  REQUIRE(QueriesFixture::Ids(alone) == std::vector<std::string>{huge.info.job_id()});
  REQUIRE(alone.next_page_token().empty());
  // States only: small records, all in one page.
  ListJobsRequest states;
  states.set_states_only(true);
  auto brief = f.queries.ListPage(states);
  REQUIRE(brief.ok());
  REQUIRE(brief->jobs_size() == 4);
  REQUIRE(brief->jobs(0).reason().empty());
}

TEST_CASE("a job's metrics come in pages whose token is checked against its records", "[jobs][queries][pages]") {
  QueriesFixture f;
  TrackedJob& job = f.Add(RUNNING);
  for (int i = 0; i < 3; ++i) {
    MetricRecord record;
    record.set_index(i);
    job.metrics.push_back(record);
  }
  JobRequest request;
  request.set_job_id(job.info.job_id());
  request.set_page_size(2);
  auto first = f.queries.Metrics(request);
  REQUIRE(first.ok());
  REQUIRE(first->records_size() == 2);
  REQUIRE(first->next_page_token() == "2");
  request.set_page_token(first->next_page_token());
  auto rest = f.queries.Metrics(request);
  REQUIRE(rest.ok());
  REQUIRE(rest->records_size() == 1);
  REQUIRE(rest->records(0).index() == 2);
  REQUIRE(rest->next_page_token().empty());
  for (const char* token : {"4", "-1", "1x"}) {
    request.set_page_token(token);
    auto refused = f.queries.Metrics(request);
    REQUIRE(refused.status().code() == Status::Code::kInvalidArgument);
    REQUIRE(refused.status().message() ==
            "'" + std::string(token) + "' is not a page token of job " + job.info.job_id() + "'s metrics (3 records)");
  }
}

TEST_CASE("logs come within the reply's budget, the ranks taking turns, and a bad rank or offset is named",
          "[jobs][queries][logs]") {
  QueriesFixture f;
  TrackedJob& job = f.Add(RUNNING, "", 2);
  const std::string id = job.info.job_id();
  f.rank_logs.Append(id, 0, "0000");
  f.rank_logs.Append(id, 1, "1111");
  LogsRequest request;
  request.set_job_id(id);
  request.set_rank(-1);
  request.set_max_bytes(4);
  request.set_start_rank(1);
  auto turn = f.queries.Logs(request);
  REQUIRE(turn.ok());
  REQUIRE(turn->chunks_size() == 1);
  REQUIRE(turn->chunks(0).rank() == 1);
  REQUIRE(turn->chunks(0).data() == "1111");
  REQUIRE(turn->chunks(0).end_offset() == 4);
  REQUIRE(turn->next_rank() == 0);  // the budget ran out before rank 0's turn
  (*request.mutable_offsets())[1] = 4;
  request.set_start_rank(turn->next_rank());
  auto next = f.queries.Logs(request);
  REQUIRE(next.ok());
  REQUIRE(next->chunks_size() == 1);
  REQUIRE(next->chunks(0).rank() == 0);
  REQUIRE(next->chunks(0).data() == "0000");

  request.clear_offsets();
  SECTION("a rank the job does not have") {
    request.set_rank(2);
    REQUIRE(f.queries.Logs(request).status().message() == "job " + id + " has ranks 0..1, not 2");
  }
  SECTION("an offset for a rank the job does not have") {
    (*request.mutable_offsets())[5] = 0;
    REQUIRE(f.queries.Logs(request).status().message() ==
            "job " + id + " has ranks 0..1: an offset for rank 5 makes no sense");
  }
  SECTION("a negative offset") {
    (*request.mutable_offsets())[0] = -1;
    REQUIRE(f.queries.Logs(request).status().message() == "offset -1 into the log of " + id + " rank 0 is negative");
  }
}

TEST_CASE("a job the head does not have is named in the refusal", "[jobs][queries]") {
  QueriesFixture f;
  auto missing = f.queries.Get("job-0042");
  REQUIRE(missing.status().code() == Status::Code::kNotFound);
  REQUIRE_THAT(missing.status().message(), Catch::Contains("job-0042"));
}
