// A head's job journal of any size, written straight to the state folder
// with the head's own FileJobStore, as a head that ran that many jobs
// would leave it: `finished` SUCCEEDED jobs, then `pending` jobs that ask
// for a GPU (INFEASIBLE on a CPU-only cluster: they wait however long the
// test runs). Shared by the restart test (integration) and the restart
// part of control_plane_bench. Header-only, so that either compiles it in.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "common/status.h"
#include "daemon/head/job_store.h"
#include "journal.pb.h"

namespace clusterd::testing {

inline Status WriteBigJournal(const std::string& state_dir, int64_t finished, int64_t pending) {
  ::mkdir(state_dir.c_str(), 0700);
  ASSIGN_OR_RETURN(std::unique_ptr<FileJobStore> store, FileJobStore::Open(state_dir + "/journal"));
  // Ended now: retention keeps them min_finished_job_age_s, so a restart
  // measures the replay, not deletions.
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  JournalEntry entry;
  for (int64_t i = 0; i < finished + pending; ++i) {
    const bool done = i < finished;
    entry.Clear();
    entry.set_unix_ms(now_ms);
    JobInfo* job = entry.mutable_job();
    job->set_job_id(fmt::format("job-{:04d}", i + 1));
    entry.set_job_id(job->job_id());
    JobSpec* spec = job->mutable_spec();
    spec->set_name(done ? "done" : "waiting");
    spec->add_entrypoint("/bin/true");
    spec->set_working_dir("/tmp");
    spec->set_working_dir_mode(SHARED);
    spec->set_num_workers(1);
    (*spec->mutable_resources_per_worker()->mutable_amounts())[done ? "CPU" : "GPU"] = 1;
    job->set_submit_unix_ms(now_ms);
    if (done) {
      job->set_state(SUCCEEDED);
      job->set_reason("all 1 ranks exited 0 (attempt 0)");
      job->set_end_unix_ms(now_ms);
    } else {
      job->set_state(INFEASIBLE);
      job->set_reason("cannot fit even on an idle cluster: needs 1 x {1 GPU} (PACK)");
    }
    RETURN_IF_ERROR(store->Append(entry));
  }
  return store->SyncTask()();
}

}  // namespace clusterd::testing
