// JobAdmission on its own over a job table and placement: a submit is
// checked again on the head (the wire is open to any client), held to the
// submit limits, journalled before it is acknowledged and then queued; a
// refused one names what was wrong and leaves nothing behind (no job, no
// journal entry, no job id used up).
#include <catch2/catch.hpp>

#include <string>

#include "daemon/head/job_adoption.h"
#include "daemon/head/job_admission.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_placement.h"
#include "daemon/head/job_replay.h"
#include "job_table_fixture.h"
#include "submit_request.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

struct AdmissionFixture : JobConcernsFixture {
  JobAdoption adoption{&clock, config, AdoptionParts(), Send(), [] {}};
  JobAttempts attempts{&clock, config, AttemptParts(&adoption), [this] { placement.Schedule(); }};
  JobPlacement placement{&table, &nodes, &infeasible, &arrays, &attempts};

  // Admission reads the submit limits from the config when it is made: a
  // test sets them first.
  JobAdmission Admission() { return JobAdmission(&clock, config, &table, &data, &job_logs, &placement); }

  static SubmitJobRequest Request(int workers = 1) { return SubmitRequestFor(workers); }
};

}  // namespace

TEST_CASE("a submit is journalled and queued, placed at once when it fits, and judged INFEASIBLE at once when never",
          "[jobs][admission]") {
  AdmissionFixture f;
  JobAdmission admission = f.Admission();
  const std::string a = f.AddNode("a", 1);
  auto first = admission.Submit(AdmissionFixture::Request());
  REQUIRE(first.ok());
  REQUIRE(*first == "job-0001");
  REQUIRE(f.table.Find(*first)->info.state() == RUNNING);
  REQUIRE(f.table.Find(*first)->info.submit_unix_ms() == f.clock.UnixMillis());
  REQUIRE(LatestJobs(f.store.entries()).count(*first) == 1);

  auto waits = admission.Submit(AdmissionFixture::Request());
  REQUIRE(waits.ok());
  REQUIRE(f.table.Find(*waits)->info.state() == PENDING);
  REQUIRE(f.table.queue().front() == *waits);
  // Behind a waiting job, one that no idle cluster could hold is told so now.
  auto never = admission.Submit(AdmissionFixture::Request(3));
  REQUIRE(never.ok());
  REQUIRE(f.table.Find(*never)->info.state() == INFEASIBLE);
  REQUIRE(LatestJobs(f.store.entries()).at(*never).state() == INFEASIBLE);
}

TEST_CASE("a submit past max_submitted_jobs is refused whole, naming the key, and leaves nothing behind",
          "[jobs][admission][limits]") {
  AdmissionFixture f;
  f.config.max_submitted_jobs = 2;
  JobAdmission admission = f.Admission();
  REQUIRE(admission.Submit(AdmissionFixture::Request()).ok());
  auto second = admission.Submit(AdmissionFixture::Request());
  REQUIRE(second.ok());
  const size_t entries = f.store.entries().size();

  auto refused = admission.Submit(AdmissionFixture::Request());
  REQUIRE(refused.status().code() == Status::Code::kResourceExhausted);
  REQUIRE_THAT(refused.status().message(), Catch::Contains("max_submitted_jobs"));
  // An array is refused whole: not the one job that would fit.
  SubmitJobRequest array = AdmissionFixture::Request();
  array.mutable_spec()->mutable_array()->set_count(2);
  f.table.SetState(*f.table.Find(*second), STOPPED, "stopped by a test");  // room for one
  const size_t after_stop = f.store.entries().size();
  REQUIRE(after_stop > entries);
  auto whole = admission.Submit(array);
  REQUIRE(whole.status().code() == Status::Code::kResourceExhausted);
  REQUIRE(f.table.size() == 2);
  REQUIRE(f.store.entries().size() == after_stop);

  // Finished jobs do not count, and no refusal used up a job id.
  auto next = admission.Submit(AdmissionFixture::Request());
  REQUIRE(next.ok());
  REQUIRE(*next == "job-0003");
}

TEST_CASE("a submit the journal cannot hold is refused and its job id is handed out again", "[jobs][admission][journal]") {
  AdmissionFixture f;
  JobAdmission admission = f.Admission();
  f.store.set_fail_appends(true);
  auto refused = admission.Submit(AdmissionFixture::Request());
  REQUIRE(refused.status().code() == Status::Code::kUnavailable);
  REQUIRE_THAT(refused.status().message(), Catch::EndsWith("the job was not submitted"));
  REQUIRE(f.table.size() == 0);
  REQUIRE(f.table.queue().empty());
  f.store.set_fail_appends(false);
  auto next = admission.Submit(AdmissionFixture::Request());
  REQUIRE(next.ok());
  REQUIRE(*next == "job-0001");  // never acknowledged, so never handed out
}

TEST_CASE("a submit the head must refuse names what was wrong and makes no job", "[jobs][admission]") {
  AdmissionFixture f;
  f.config.log_limit_max_mb = 1;
  JobAdmission admission = f.Admission();
  auto taken = admission.Submit([] {
    SubmitJobRequest request = AdmissionFixture::Request();
    request.mutable_spec()->set_submission_id("nightly-42");
    return request;
  }());
  REQUIRE(taken.ok());
  const size_t jobs = f.table.size(), entries = f.store.entries().size();

  SubmitJobRequest request = AdmissionFixture::Request();
  std::string expected;
  SECTION("a submission_id that is another job's") {
    request.mutable_spec()->set_submission_id("nightly-42");
    expected = "key 'submission_id': 'nightly-42' is job " + *taken + "'s already; choose another";
  }
  SECTION("a passthrough variable no env_passthrough pattern matches") {
    request.mutable_spec()->add_env_passthrough("DVC_*");
    (*request.mutable_passthrough_env())["AWS_SECRET"] = "x";
    expected = "passthrough variable AWS_SECRET matches no env_passthrough pattern";
  }
  SECTION("a passthrough variable clusterd sets itself") {
    request.mutable_spec()->add_env_passthrough("*");
    (*request.mutable_passthrough_env())["RANK"] = "3";
    expected = "passthrough variable RANK is set by clusterd and cannot be passed";
  }
  SECTION("a log_limit above log_limit_max_mb") {
    request.mutable_spec()->set_log_limit_bytes(int64_t{2} << 20);
    expected = "key 'log_limit': 2.0 MiB is above the most this cluster keeps of a rank's output, 1.0 MiB "
               "(log_limit_max_mb)";
  }
  SECTION("a shipped working_dir without its package") {
    request.mutable_spec()->set_working_dir_mode(SHIP);
    expected = "job 'train' ships working_dir /work but names no package";
  }
  auto refused = admission.Submit(request);
  REQUIRE_FALSE(refused.ok());
  REQUIRE_THAT(refused.status().message(), Catch::StartsWith(expected));
  REQUIRE(f.table.size() == jobs);
  REQUIRE(f.store.entries().size() == entries);
}

TEST_CASE("an array's jobs are made by one submit, named after the first and told their index",
          "[jobs][admission][array]") {
  AdmissionFixture f;
  JobAdmission admission = f.Admission();
  SubmitJobRequest request = AdmissionFixture::Request();
  request.mutable_spec()->mutable_array()->set_count(3);
  auto array = admission.Submit(request);
  REQUIRE(array.ok());
  REQUIRE(*array == "job-0001");
  REQUIRE(f.table.size() == 3);
  for (int index = 0; index < 3; ++index) {
    const TrackedJob& job = f.table.At(f.table.order()[static_cast<size_t>(index)]);
    REQUIRE(job.info.spec().array_id() == *array);
    REQUIRE(job.info.spec().array_index() == index);
    REQUIRE(LatestJobs(f.store.entries()).count(job.info.job_id()) == 1);
  }
}
