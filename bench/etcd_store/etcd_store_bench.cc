// bench/etcd_store: the head's state in etcd (daemon/ha/etcd_job_store.h)
// on three real etcd members on this machine, in one run:
//  (a) append throughput with group commit: job records appended in bursts
//      of B, each burst made durable by one sync, through etcd and through
//      the local FileJobStore (journal file + fdatasync), and their ratio;
//  (b) 100,000 finished jobs: 4 records each appended in bursts, the store
//      compacted as the job journal does (once it holds twice its last
//      snapshot), then etcd's db size (Maintenance Status dbSize, what its
//      2 GiB quota counts) on each member, against the quota.
//   etcd_store_bench [--entries 20000] [--jobs 100000] [--records-per-job 4]
// Prints a Markdown table.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "daemon/ha/etcd_client.h"
#include "daemon/ha/etcd_job_store.h"
#include "daemon/head/job_store.h"
#include "etcd_members.h"
#include "bench/common/bench_failure.h"
#include "flags.h"
#include "scratch_dir.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace clusterd::bench;
using Steady = std::chrono::steady_clock;

namespace {

// A finished one-rank job's whole record, as the journal holds it (about
// 150 bytes).
JournalEntry FinishedJob(int64_t n) {
  JournalEntry entry;
  entry.set_unix_ms(1764000000000 + n);
  JobInfo* job = entry.mutable_job();
  job->set_job_id(fmt::format("job-{:06d}", n));
  entry.set_job_id(job->job_id());
  JobSpec* spec = job->mutable_spec();
  spec->set_name("bench");
  spec->add_entrypoint("python3");
  spec->add_entrypoint("train.py");
  spec->set_working_dir("/home/user/project");
  spec->set_num_workers(1);
  (*spec->mutable_resources_per_worker()->mutable_amounts())["CPU"] = 1;
  job->set_submit_unix_ms(1764000000000 + n);
  job->set_end_unix_ms(1764000000000 + n + 5000);
  job->set_state(SUCCEEDED);
  job->set_reason("all 1 ranks exited 0 (attempt 0)");
  return entry;
}

double Seconds(Steady::time_point since) {
  return std::chrono::duration<double>(Steady::now() - since).count();
}

// Entries per second through `store`: `entries` records in bursts of `burst`.
double AppendRate(JobStore* store, int entries, int burst, int64_t first) {
  const auto start = Steady::now();
  for (int i = 0; i < entries; i += burst) {
    for (int j = i; j < std::min(entries, i + burst); ++j) ThrowIfFailed(store->Append(FinishedJob(first + j)), "append");
    ThrowIfFailed(store->SyncTask()(), "sync");
  }
  return entries / Seconds(start);
}

std::unique_ptr<EtcdClient> ClientOf(const EtcdMembers& etcd) {
  EtcdClientOptions options;
  options.members = etcd.client_addresses();
  options.call_timeout_ms = 5000;
  auto client = EtcdClient::Create(options);
  ThrowIfFailed(client.status(), "etcd client");
  return std::move(*client);
}

int64_t TakeLeaderKey(EtcdClient* client, const std::string& prefix) {
  auto txn = client->Txn({EtcdCompare::CreateRevisionIs(prefix + "/leader", 0)},
                         {EtcdOp::Put(prefix + "/leader", "{\"id\":\"bench\"}")});
  ThrowIfFailed(txn.status(), "leader key");
  auto key = client->Get(prefix + "/leader");
  ThrowIfFailed(key.status(), "leader key");
  if (key->kvs.empty()) throw BenchFailure("leader key missing");
  return key->kvs[0].create_revision;
}

std::unique_ptr<EtcdJobStore> OpenStore(EtcdClient* client, const std::string& prefix) {
  EtcdJobStoreOptions options;
  options.prefix = prefix;
  options.name = "jobs";
  options.leader_revision = TakeLeaderKey(client, prefix);
  options.flush_ms = 0;  // only syncs write: what is measured is the group commit
  auto store = EtcdJobStore::Open(client, options);
  ThrowIfFailed(store.status(), "etcd store");
  return std::move(*store);
}

int Run(int argc, char** argv) {
  int entries = 20000;
  int jobs = 100000;
  int records_per_job = 4;
  std::set<std::string> parts;
  if (!bench::ParseFlags(argc, argv, &parts, {{"--entries", &entries}, {"--jobs", &jobs}, {"--records-per-job", &records_per_job}})) {
    std::cerr << "usage: etcd_store_bench [--entries N] [--jobs N] [--records-per-job N]\n";
    return 2;
  }
  std::string why;
  if (!EtcdMembers::Installed(&why)) throw BenchFailure(why);
  bench::ScratchDir scratch("etcd-store-bench");
  if (!scratch.ok()) throw BenchFailure("no scratch folder in /tmp");
  EtcdMembers etcd(3);
  if (!etcd.error().empty()) throw BenchFailure(etcd.error());
  auto client = ClientOf(etcd);

  std::cout << "\n(a) append throughput with group commit, " << entries
            << " finished-job records (~150 B), 3 etcd members on this machine\n\n";
  std::cout << "| burst (entries per sync) | etcd entries/s | FileJobStore entries/s | etcd / file |\n";
  std::cout << "| --- | --- | --- | --- |\n";
  int round = 0;
  for (int burst : {1, 16, 256}) {
    const int n = burst == 1 ? std::min(entries, 2000) : entries;
    auto etcd_store = OpenStore(client.get(), fmt::format("/bench-a{}", round));
    const double etcd_rate = AppendRate(etcd_store.get(), n, burst, 0);
    auto file_store = FileJobStore::Open(fmt::format("{}/journal-{}", scratch.path(), round));
    ThrowIfFailed(file_store.status(), "file store");
    const double file_rate = AppendRate(file_store->get(), n, burst, 0);
    std::cout << fmt::format("| {} | {:.0f} | {:.0f} | {:.2f} |\n", burst, etcd_rate, file_rate, etcd_rate / file_rate);
    ++round;
  }

  std::cout << "\n(b) " << jobs << " finished jobs, " << records_per_job
            << " whole records each, appended in bursts of 256 jobs, compacted at twice the last "
            << "snapshot (at least 8 MiB), then two final compactions\n\n";
  auto store = OpenStore(client.get(), "/bench-b");
  uint64_t snapshot_bytes = 0;
  int compactions = 0;
  int64_t appended_bytes = 0;
  auto compact = [&](int64_t upto) {
    ThrowIfFailed(store->CompactFrom([&](const JobStore::EntrySink& emit) -> Status {
            for (int64_t j = 0; j < upto; ++j) RETURN_IF_ERROR(emit(FinishedJob(j)));
            return Status::Ok();
          }),
          "compaction");
    snapshot_bytes = store->bytes();
    ++compactions;
  };
  const auto start = Steady::now();
  for (int i = 0; i < jobs; i += 256) {
    const int end = std::min(jobs, i + 256);
    for (int j = i; j < end; ++j) {
      // Its submit, start and end, and a later change (as deltas and whole
      // records come, here all whole: the larger case).
      for (int k = 0; k < records_per_job; ++k) {
        JournalEntry entry = FinishedJob(j);
        appended_bytes += static_cast<int64_t>(entry.ByteSizeLong());
        ThrowIfFailed(store->Append(entry), "append");
      }
    }
    ThrowIfFailed(store->SyncTask()(), "sync");
    if (store->bytes() > std::max<uint64_t>(2 * snapshot_bytes, 8 << 20)) compact(end);
  }
  const double took = Seconds(start);
  compact(jobs);
  compact(jobs);
  std::cout << "| jobs | appended | took | compactions | snapshot | etcd dbSize (each member) | quota |\n";
  std::cout << "| --- | --- | --- | --- | --- | --- | --- |\n";
  std::string sizes;
  int64_t largest = 0;
  for (size_t m = 0; m < client->member_count(); ++m) {
    auto status = client->MemberStatus(m);
    ThrowIfFailed(status.status(), "member status");
    sizes += fmt::format("{}{:.1f} MiB", sizes.empty() ? "" : ", ", status->db_size / 1048576.0);
    largest = std::max(largest, status->db_size);
  }
  std::cout << fmt::format("| {} | {:.1f} MiB | {:.1f} s | {} | {:.1f} MiB | {} | {:.1f}% of 2 GiB |\n", jobs,
                           appended_bytes / 1048576.0, took, compactions, snapshot_bytes / 1048576.0, sizes, 100.0 * largest / (2.0 * 1024 * 1048576));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return clusterd::bench::RunReportingFailure("etcd_store_bench", [](int c, char** v) { return Run(c, v); }, argc, argv);
}
