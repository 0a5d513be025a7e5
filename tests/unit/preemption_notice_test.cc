// The preemption notice a node gives its ranks (daemon/agent/preemption_notice.h):
// a whole file at the path their CLUSTER_PREEMPTION_FILE names.
#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "daemon/agent/preemption_notice.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("a node writes the notice where the ranks look, and refuses a job id that is no file name",
          "[preemption][node_agent]") {
  TempTree t;
  t.Write("logs/.keep", "");
  PreemptRanks notice;
  notice.set_job_id("job-0001");
  notice.set_attempt(3);
  notice.set_deadline_unix_ms(1700000000500);
  notice.set_by_job("job-0002");
  REQUIRE(WritePreemptionNotice(t.Path("logs"), notice).ok());
  CHECK(PreemptionNoticePath(t.Path("logs"), "job-0001", 3) == t.Path("logs/job-0001.attempt-3.preemption"));
  CHECK(t.Read("logs/job-0001.attempt-3.preemption") == "1700000000500 job-0002\n");
  notice.set_job_id("../escape");
  Status refused = WritePreemptionNotice(t.Path("logs"), notice);
  CHECK(refused.code() == Status::Code::kInvalidArgument);
  CHECK_THAT(refused.message(), Catch::Contains("'../escape'"));
}
