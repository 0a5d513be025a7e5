// Rank logs in S3 (heads in HA): chunk objects are named so that a listing
// parses back into the log's byte ranges, and a new leader reads a log back
// from them in order, cutting overlaps, leaving out a deposed leader's late
// writes and marking what no chunk holds. The store's side: what it keeps
// is told as it is kept, and a reader ahead of the log is sent back to its end.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/logs/log_chunks.h"
#include "common/logs/log_store.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

StoredLogChunk Chunk(int64_t start, int64_t end, int64_t term) {
  StoredLogChunk chunk;
  chunk.job_id = "job-0001";
  chunk.start = start;
  chunk.end = end;
  chunk.term = term;
  chunk.key = LogChunkKey("p", chunk.job_id, 0, start, end, term);
  return chunk;
}

// "start-end@term skip gap" for each piece, to compare plans at a glance.
std::vector<std::string> Shown(const LogChunkPlan& plan) {
  std::vector<std::string> shown;
  for (const auto& piece : plan.pieces) {
    shown.push_back(std::to_string(piece.chunk.start) + "-" + std::to_string(piece.chunk.end) + "@" +
                    std::to_string(piece.chunk.term) + " skip " + std::to_string(piece.skip) + " gap " +
                    std::to_string(piece.gap_before));
  }
  return shown;
}

}  // namespace

TEST_CASE("a log chunk's key sorts by its start and parses back into its job, rank, range and term", "[ha_logs]") {
  const std::string key = LogChunkKey("runs/exp1", "job-0007-ab12", 3, 4096, 8192, 17);
  REQUIRE(key == "runs/exp1/logs/job-0007-ab12/rank-3/0000000000004096-0000000000008192-0000000000000017");
  REQUIRE(LogChunkKey("", "job-1", 0, 0, 1, 1) == "logs/job-1/rank-0/0000000000000000-0000000000000001-0000000000000001");
  // Fixed-width numbers: the listing's order is the log's.
  REQUIRE(LogChunkKey("p", "j", 0, 999, 1000, 1) < LogChunkKey("p", "j", 0, 1000, 1001, 1));
  REQUIRE(JobChunksPrefix("p", "job-1") == "p/logs/job-1/");

  auto chunk = ParseLogChunkKey("runs/exp1", key);
  REQUIRE(chunk.ok());
  CHECK(chunk->job_id == "job-0007-ab12");
  CHECK(chunk->rank == 3);
  CHECK(chunk->start == 4096);
  CHECK(chunk->end == 8192);
  CHECK(chunk->term == 17);
  CHECK(chunk->key == key);
}

TEST_CASE("a key that is not a log chunk is refused, saying what is wrong with it", "[ha_logs]") {
  const std::string digits = "0000000000000000-0000000000000010-0000000000000001";
  struct Case {
    std::string key;
    std::string why;
  };
  const std::vector<Case> cases = {
      {"other/logs/job-1/rank-0/" + digits, "not under p/logs/"},
      {"p/logs/job-1/" + digits, "rank-<n>"},
      {"p/logs/job-1/rank-x/" + digits, "'rank-x' is not rank-<n>"},
      {"p/logs/job-1/rank-99999999999/" + digits, "is not rank-<n>"},
      {"p/logs/job-1/rank-0/12-34-56", "<start>-<end>-<term>"},
      {"p/logs/job-1/rank-0/000000000000000a-0000000000000010-0000000000000001", "<start>-<end>-<term>"},
      {"p/logs/job-1/rank-0/0000000000000010-0000000000000010-0000000000000001", "not after its start"},
  };
  for (const auto& c : cases) {
    INFO(c.key);
    auto parsed = ParseLogChunkKey("p", c.key);
    REQUIRE(parsed.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(parsed.status().message(), Catch::Contains(c.why));
    CHECK_THAT(parsed.status().message(), Catch::Contains(c.key));
  }
}

TEST_CASE("a log's chunks are read in order of their start, whatever order they were listed in", "[ha_logs]") {
  LogChunkPlan plan = PlanLogChunks({Chunk(20, 30, 1), Chunk(0, 10, 1), Chunk(10, 20, 1)});
  CHECK(Shown(plan) == std::vector<std::string>{"0-10@1 skip 0 gap 0", "10-20@1 skip 0 gap 0", "20-30@1 skip 0 gap 0"});
  CHECK(plan.end == 30);
  CHECK(plan.gap_bytes == 0);
  CHECK(plan.superseded == 0);

  LogChunkPlan none = PlanLogChunks({});
  CHECK(none.pieces.empty());
  CHECK(none.end == 0);
}

TEST_CASE("a range no chunk holds is a gap before the next piece, and counted", "[ha_logs]") {
  // 10..25 never reached S3 (a buffer past ha_log_buffer_mb), and neither did the log's first 5 bytes.
  LogChunkPlan plan = PlanLogChunks({Chunk(5, 10, 1), Chunk(25, 40, 1)});
  CHECK(Shown(plan) == std::vector<std::string>{"5-10@1 skip 0 gap 5", "25-40@1 skip 0 gap 15"});
  CHECK(plan.gap_bytes == 20);
  CHECK(plan.end == 40);
  CHECK_THAT(LogGapLine(15), Catch::StartsWith("[clusterd: 15 bytes of this log are missing here"));
}

TEST_CASE("overlapping chunks of one term are cut: a retried write that took in more output wins", "[ha_logs]") {
  // The first write of 10..20 timed out but was stored; its retry carried 10..35.
  LogChunkPlan plan = PlanLogChunks({Chunk(0, 10, 1), Chunk(10, 20, 1), Chunk(10, 35, 1), Chunk(30, 50, 1)});
  CHECK(Shown(plan) == std::vector<std::string>{"0-10@1 skip 0 gap 0", "10-35@1 skip 0 gap 0", "30-50@1 skip 5 gap 0"});
  CHECK(plan.end == 50);
  CHECK(plan.gap_bytes == 0);
}

TEST_CASE("a deposed leader's chunk written after its successor read the log is left out", "[ha_logs]") {
  // Term 1 wrote 0..20; term 2 read that back and went on from 20. Term 1's
  // write of 20..26 landed late: term 2's 20..40 is the log from there on,
  // and term 1's 26..30 as well.
  LogChunkPlan plan = PlanLogChunks({Chunk(0, 10, 1), Chunk(10, 20, 1), Chunk(20, 26, 1), Chunk(26, 30, 1),
                                     Chunk(20, 40, 2), Chunk(40, 45, 2)});
  CHECK(Shown(plan) == std::vector<std::string>{"0-10@1 skip 0 gap 0", "10-20@1 skip 0 gap 0", "20-40@2 skip 0 gap 0",
                                                "40-45@2 skip 0 gap 0"});
  CHECK(plan.superseded == 2);
  CHECK(plan.end == 45);

  // Before term 2 writes anything of this log, term 1's late chunk is the log's
  // end: output that did reach S3, shown.
  LogChunkPlan late = PlanLogChunks({Chunk(0, 20, 1), Chunk(20, 26, 1)});
  CHECK(late.end == 26);
  CHECK(late.superseded == 0);
  // A successor that lost term 1's last output goes on from 20; its chunks
  // make a late 20..26 of term 1 superseded, not a part of the log.
  LogChunkPlan lost = PlanLogChunks({Chunk(0, 20, 1), Chunk(20, 26, 1), Chunk(20, 23, 2)});
  CHECK(Shown(lost) == std::vector<std::string>{"0-20@1 skip 0 gap 0", "20-23@2 skip 0 gap 0"});
  CHECK(lost.end == 23);
}

namespace {

struct Recorder : LogStoreObserver {
  std::vector<std::string> kept;
  std::vector<std::string> deleted;
  void OnKept(const std::string& job_id, int rank, const std::string& data) override {
    kept.push_back(job_id + "/" + std::to_string(rank) + ":" + data);
  }
  void OnDeleted(const std::string& job_id) override { deleted.push_back(job_id); }
};

}  // namespace

TEST_CASE("a log store tells its observer each append as kept and each deleted job", "[ha_logs]") {
  TempTree dir;
  LogStore logs(dir.Path("jobs"), LogStore::kDefaultPackedLimit, /*limit_bytes=*/200);
  Recorder recorder;
  logs.set_observer(&recorder);
  logs.Append("job-1", 0, "hello\n");
  logs.Append("job-1", 1, std::string(300, 'x'));  // past the limit: not kept, not told
  logs.Append("job-1", 1, "after\n");              // kept, after the line that says what was lost
  logs.Delete("job-1", 2);
  REQUIRE(recorder.kept.size() == 2);
  CHECK(recorder.kept[0] == "job-1/0:hello\n");
  CHECK_THAT(recorder.kept[1], Catch::StartsWith("job-1/1:[clusterd: 300 bytes of this log were lost here"));
  CHECK_THAT(recorder.kept[1], Catch::EndsWith("after\n"));
  CHECK(recorder.deleted == std::vector<std::string>{"job-1"});
}

TEST_CASE("a reader ahead of a log read back after a failover is sent to its end with a line that says so",
          "[ha_logs]") {
  TempTree dir;
  LogStore logs(dir.Path("jobs"));
  logs.Append("job-1", 0, "0123456789");
  int64_t end = 0;
  // Without HA an offset past the end is a client's mistake.
  REQUIRE(logs.Read("job-1", 0, 15, 100, &end).status().code() == Status::Code::kInvalidArgument);
  logs.set_offsets_may_run_ahead(true);
  auto ahead = logs.Read("job-1", 0, 15, 100, &end);
  REQUIRE(ahead.ok());
  CHECK(end == 10);
  CHECK_THAT(*ahead, Catch::Contains("goes on from byte 10, not 15"));
  // From there on the log reads as before.
  logs.Append("job-1", 0, "abc");
  auto next = logs.Read("job-1", 0, end, 100, &end);
  REQUIRE(next.ok());
  CHECK(*next == "abc");
  CHECK(end == 13);
  REQUIRE(logs.Read("job-1", 0, -1, 100, &end).status().code() == Status::Code::kInvalidArgument);
}
