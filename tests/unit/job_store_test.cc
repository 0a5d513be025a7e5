#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <google/protobuf/util/message_differencer.h>
#include <string>
#include <vector>

#include "daemon/head/job_replay.h"
#include "daemon/head/job_store.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using clusterd::FileJobStore;
using clusterd::JobInfo;
using clusterd::JournalEntry;
using clusterd::MemoryJobStore;
using clusterd::Status;
using google::protobuf::util::MessageDifferencer;

namespace {

using clusterd::testing::TempDir;

JournalEntry JobEntry(const std::string& id, clusterd::JobState state, const std::string& reason = "") {
  JournalEntry e;
  e.set_job_id(id);
  e.mutable_job()->set_job_id(id);
  e.mutable_job()->set_state(state);
  e.mutable_job()->set_reason(reason);
  (*e.mutable_job()->mutable_passthrough_env())["HF_HOME"] = "/data/hf";
  return e;
}

JournalEntry MetricEntry(const std::string& id, int64_t index, double loss) {
  JournalEntry e;
  e.set_job_id(id);
  e.mutable_metric()->set_index(index);
  (*e.mutable_metric()->mutable_values())["loss"] = loss;
  return e;
}

bool SameEntries(const std::vector<JournalEntry>& a, const std::vector<JournalEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!MessageDifferencer::Equals(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("job store: FileJobStore persists entries across reopen", "[journal]") {
  TempDir dir{"job-store-test"};
  const std::string path = (dir.path / "jobs.journal").string();
  std::vector<JournalEntry> want = {JobEntry("j1", clusterd::PENDING), MetricEntry("j1", 0, 2.5),
                                    JobEntry("j1", clusterd::RUNNING, "done")};
  {
    auto store = FileJobStore::Open(path);
    REQUIRE(store.ok());
    for (const auto& e : want) REQUIRE((*store)->Append(e).ok());
    auto loaded = (*store)->LoadAll();
    REQUIRE(loaded.ok());
    REQUIRE(SameEntries(*loaded, want));
  }
  auto again = FileJobStore::Open(path);
  REQUIRE(again.ok());
  want.push_back(MetricEntry("j2", 7, 0.1));
  REQUIRE((*again)->Append(want.back()).ok());
  auto loaded = (*again)->LoadAll();
  REQUIRE(loaded.ok());
  REQUIRE(SameEntries(*loaded, want));
}

TEST_CASE("job store: a checksum-valid record that is not a JournalEntry is corruption", "[journal]") {
  TempDir dir{"job-store-test"};
  const std::string path = (dir.path / "jobs.journal").string();
  {
    auto w = clusterd::JournalWriter::Open(path);
    REQUIRE(w.ok());
    JournalEntry e = JobEntry("ok", clusterd::PENDING);
    REQUIRE((*w)->Append(e.SerializeAsString()).ok());
    REQUIRE((*w)->Append("\xff").ok());  // a truncated varint tag
  }
  auto store = FileJobStore::Open(path);
  REQUIRE(store.ok());
  auto loaded = (*store)->LoadAll();
  REQUIRE(loaded.status().code() == Status::Code::kCorruption);
  REQUIRE_THAT(loaded.status().message(), Catch::Contains("record 1"));
}

TEST_CASE("job store: Compact keeps the given entries and appending goes on", "[journal]") {
  TempDir dir{"job-store-test"};
  const std::string path = (dir.path / "jobs.journal").string();
  auto store = FileJobStore::Open(path);
  REQUIRE(store.ok());
  for (auto state : {clusterd::PENDING, clusterd::RUNNING, clusterd::SUCCEEDED}) {
    REQUIRE((*store)->Append(JobEntry("a", state)).ok());
  }
  REQUIRE((*store)->Append(JobEntry("b", clusterd::PENDING)).ok());

  auto loaded = (*store)->LoadAll();
  REQUIRE(loaded.ok());
  std::vector<JournalEntry> compacted;
  for (const auto& [id, job] : clusterd::LatestJobs(*loaded)) {
    JournalEntry e;
    e.set_job_id(id);
    *e.mutable_job() = job;
    compacted.push_back(e);
  }
  REQUIRE((*store)->Compact(compacted).ok());
  REQUIRE((*store)->Append(MetricEntry("b", 0, 1.0)).ok());

  auto reopened = FileJobStore::Open(path);
  REQUIRE(reopened.ok());
  auto after = (*reopened)->LoadAll();
  REQUIRE(after.ok());
  REQUIRE(after->size() == 3);
  auto replay = clusterd::ReplayJobs(*after);
  REQUIRE(replay.jobs.at("a").state() == clusterd::SUCCEEDED);
  REQUIRE(replay.metrics.at("b").size() == 1);
}

TEST_CASE("job store: a compaction written as entries come is all or nothing and leaves no temporary file",
          "[journal]") {
  TempDir dir{"job-store-test"};
  const std::string path = (dir.path / "jobs.journal").string();
  auto store = FileJobStore::Open(path);
  REQUIRE(store.ok());
  REQUIRE((*store)->Append(JobEntry("a", clusterd::PENDING)).ok());
  REQUIRE((*store)->Append(JobEntry("b", clusterd::PENDING)).ok());
  // 40 entries of 64 KiB, more than one flush of the rewrite's buffer (1
  // MiB); then the source fails or ends as `end` says.
  const std::string reason(64 << 10, 'r');
  auto forty_then = [&](Status end) {
    return [&, end](const clusterd::JobStore::EntrySink& emit) {
      for (int i = 0; i < 40; ++i) {
        Status emitted = emit(JobEntry("job-" + std::to_string(i), clusterd::SUCCEEDED, reason));
        if (!emitted.ok()) return emitted;
      }
      return end;
    };
  };
  Status failed = (*store)->CompactFrom(forty_then(Status::IOError("the source broke off")));
  REQUIRE(failed.code() == Status::Code::kIOError);
  REQUIRE_FALSE(fs::exists(path + ".compact"));
  REQUIRE((*store)->Append(JobEntry("c", clusterd::PENDING)).ok());  // appends go on, after the old entries
  auto kept = (*store)->LoadAll();
  REQUIRE(kept.ok());
  REQUIRE(kept->size() == 3);

  // The same source, whole: exactly its 40 entries, then appends after them.
  REQUIRE((*store)->CompactFrom(forty_then(Status::Ok())).ok());
  REQUIRE_FALSE(fs::exists(path + ".compact"));
  REQUIRE((*store)->Append(JobEntry("d", clusterd::PENDING)).ok());
  auto reopened = FileJobStore::Open(path);
  REQUIRE(reopened.ok());
  auto after = (*reopened)->LoadAll();
  REQUIRE(after.ok());
  REQUIRE(after->size() == 41);
  CHECK(after->front().job_id() == "job-0");
  CHECK(after->back().job_id() == "d");
}

TEST_CASE("job store: MemoryJobStore fails on demand and stores nothing then", "[journal]") {
  MemoryJobStore store;
  REQUIRE(store.Append(JobEntry("j1", clusterd::PENDING)).ok());
  store.set_fail_appends(true);
  Status st = store.Append(JobEntry("j1", clusterd::RUNNING));
  REQUIRE(st.code() == Status::Code::kIOError);
  REQUIRE(store.entries().size() == 1);
  store.set_fail_appends(false);
  REQUIRE(store.Append(JobEntry("j1", clusterd::SUCCEEDED)).ok());

  store.set_fail_loads(true);
  REQUIRE(store.LoadAll().status().code() == Status::Code::kIOError);
  store.set_fail_loads(false);
  auto loaded = store.LoadAll();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->size() == 2);
  REQUIRE(loaded->back().job().state() == clusterd::SUCCEEDED);
}

TEST_CASE("job store: replay keeps the last record per job and groups metrics", "[journal]") {
  std::vector<JournalEntry> entries = {
      JobEntry("a", clusterd::PENDING),
      MetricEntry("a", 0, 3.0),
      JobEntry("b", clusterd::PENDING),
      MetricEntry("b", 0, 9.0),
      JobEntry("a", clusterd::RUNNING, "started"),
      MetricEntry("a", 1, 2.0),
      JobEntry("a", clusterd::SUCCEEDED, "finished"),
  };
  JournalEntry id_only_in_job;  // entry.job_id empty: falls back to job.job_id
  id_only_in_job.mutable_job()->set_job_id("c");
  entries.push_back(id_only_in_job);
  entries.push_back(JournalEntry());  // no id, no kind: skipped
  JournalEntry no_kind;
  no_kind.set_job_id("a");  // a kind this head does not know: skipped
  entries.push_back(no_kind);

  auto latest = clusterd::LatestJobs(entries);
  REQUIRE(latest.size() == 3);
  REQUIRE(latest.at("a").state() == clusterd::SUCCEEDED);
  REQUIRE(latest.at("a").reason() == "finished");
  REQUIRE(latest.at("b").state() == clusterd::PENDING);
  REQUIRE(latest.count("c") == 1);

  auto replay = clusterd::ReplayJobs(entries);
  REQUIRE(replay.metrics.size() == 2);
  REQUIRE(replay.metrics.at("a").size() == 2);
  REQUIRE(replay.metrics.at("a")[0].index() == 0);
  REQUIRE(replay.metrics.at("a")[1].index() == 1);
  REQUIRE(replay.metrics.at("a")[1].values().at("loss") == 2.0);
  REQUIRE(replay.metrics.at("b").size() == 1);
  REQUIRE(replay.jobs.size() == 3);
}
