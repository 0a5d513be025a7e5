// The run: machines up, the failover trials (sizes interleaved, so that a
// slow spell of the shared machine hits both alike), then the upload's cost,
// the re-upload and the baselines on the last uploaded checkpoint.
#include "checkpoints.h"

#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "ckpt_jobs.h"
#include "copy_baselines.h"
#include "failover.h"
#include "scratch_dir.h"
#include "sim_cluster.h"
#include "stats.h"
#include "upload_cost.h"

namespace clusterd::bench {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kStamps = "/tmp/ckb/stamps";  // every worker

struct FailoverSamples {
  Samples total, dead, ended, placed, restored, running;
  int without_parts = 0;
  uint64_t bytes = 0;
  void Add(const FailoverTimes& t) {
    total.Add(t.TotalMs());
    bytes = t.bytes;
    if (!t.parts) {
      ++without_parts;
      return;
    }
    dead.Add(t.Ms(t.kill_ns, t.dead_ns));
    ended.Add(t.Ms(t.dead_ns, t.ended_ns));
    placed.Add(t.Ms(t.ended_ns, t.placed_ns));
    restored.Add(t.Ms(t.placed_ns, t.restored_ns));
    running.Add(t.Ms(t.restored_ns, t.running_ns));
  }
};

struct Reupload {
  Samples warm;
  double cold_ms = 0, copy_ms = 0;
  int64_t cold_hashed = 0, copy_hashed = 0, warm_hashed_max = 0, sent_max = 0;
};

double MiBps(uint64_t bytes, double ms) { return ms > 0 ? static_cast<double>(bytes) / 1048576.0 / (ms / 1e3) : 0; }

// ckpt_upload on the node that wrote the checkpoint (see ckpt_upload.cc).
bool RunReupload(SimCluster& cluster, const UploadCost& u, int warm, Reupload* r, std::string* error) {
  testing::RunResult run = u.machine->Run(
      {CKPT_UPLOAD_BIN, cluster.address, u.checkpoint_dir, u.last_checkpoint, "/tmp/ckb/upload-cache",
       std::to_string(warm)},
      {{"CLUSTER_TOKEN", cluster.token}}, 300s);
  std::istringstream lines(run.out);
  std::string kind;
  double ms = 0;
  int64_t hashed = 0, sent = 0;
  while (lines >> kind >> ms >> hashed >> sent) {
    r->sent_max = std::max(r->sent_max, sent);
    if (kind == "cold") {
      r->cold_ms = ms;
      r->cold_hashed = hashed;
    } else if (kind == "warm") {
      r->warm.Add(ms);
      r->warm_hashed_max = std::max(r->warm_hashed_max, hashed);
    } else if (kind == "copy") {
      r->copy_ms = ms;
      r->copy_hashed = hashed;
    }
  }
  if (run.exit_code != 0 || r->warm.size() != static_cast<size_t>(warm) || r->copy_ms == 0) {
    *error = "ckpt_upload failed (" + std::to_string(run.exit_code) + "): " + run.err + run.out;
    return false;
  }
  return true;
}

// cp -r, tar | nc to another node, and tar | nc to both other nodes at once
// (the restore's fan-out) of the last checkpoint, `copies` times each,
// interleaved.
bool RunBaselines(SimCluster& cluster, const UploadCost& u, int copies, const std::string& scratch, Samples* cp,
                  Samples* tar, Samples* tar_both, std::string* error) {
  testing::Machine& from = *u.machine;
  std::vector<testing::Machine*> others;
  for (testing::Machine* w : cluster.workers) {
    if (w != &from) others.push_back(w);
  }
  std::string src = u.checkpoint_dir + "/" + u.last_checkpoint;
  uint64_t expect = FileBytes(from.HostPath(src));
  std::error_code ec;
  for (int i = 0; i < copies; ++i) {
    std::string cp_dest = fmt::format("/tmp/ckb/cp-{}", i);
    StampedTimes t;
    if (!TimeCp(from, STAMP_RUN_BIN, src, cp_dest, /*sync=*/true, kStamps + "/cp-" + std::to_string(i), &t, error)) {
      return false;
    }
    uint64_t got = FileBytes(from.HostPath(cp_dest));
    fs::remove_all(from.HostPath(cp_dest), ec);
    if (got != expect) {
      *error = fmt::format("cp -r copied {} bytes, not {}", got, expect);
      return false;
    }
    cp->Add(t.Ms());

    for (bool both : {false, true}) {
      TarOverNc copy;
      copy.from = &from;
      copy.src = src;
      copy.to = others[0];
      if (both) copy.also_to = {others.begin() + 1, others.end()};
      copy.dest = fmt::format("/tmp/ckb/tar-{}", i);
      copy.port = 7300 + 10 * i + (both ? 5 : 0);
      copy.stamp_run = STAMP_RUN_BIN;
      copy.stamps = kStamps;
      copy.name = fmt::format("tar-{}{}", i, both ? "-both" : "");
      copy.log = scratch + "/" + copy.name + ".log";
      copy.sync = true;
      std::vector<testing::Machine*> receivers = {copy.to};
      receivers.insert(receivers.end(), copy.also_to.begin(), copy.also_to.end());
      for (testing::Machine* m : receivers) fs::create_directories(m->HostPath(copy.dest), ec);
      bool ok = TimeTarOverNc(copy, &t, error);
      for (testing::Machine* m : receivers) {
        got = FileBytes(m->HostPath(copy.dest));
        fs::remove_all(m->HostPath(copy.dest), ec);
        if (ok && got != expect) {
          *error = fmt::format("tar | nc delivered {} bytes to {}, not {}", got, m->name(), expect);
          ok = false;
        }
      }
      if (!ok) return false;
      (both ? tar_both : tar)->Add(t.Ms());
    }
  }
  return true;
}

void FailoverRows(Report* report, int mib, bool power_loss, const FailoverSamples& s, const CheckpointOptions& o,
                  const Samples& tar, const Samples& tar_both) {
  std::string what = fmt::format("{} of rank 0's machine -> both ranks of attempt 1 running, {} MiB checkpoint "
                                 "restored", power_loss ? "power loss (cable cut, SIGKILL)" : "SIGKILL", mib);
  std::string n = fmt::format(" (n={})", s.total.size());
  if (power_loss) {
    report->Info(what + ", median" + n, s.total.Median(), "ms", o.node_timeout_ms + 1000, "node timeout + 1 s");
    report->Info(what + ", max", s.total.Max(), "ms");
  } else if (mib == o.large_mib) {
    if (tar.empty()) {
      report->Check(what + ", median" + n, s.total.Median(), "ms", o.node_timeout_ms + 1000, o.node_timeout_ms,
                    "--node-timeout-ms");
    } else {
      report->Check(what + ", median" + n, s.total.Median(), "ms", o.node_timeout_ms + 1000, tar.Median(),
                    "tar+nc, median");
    }
    report->Check(what + ", max", s.total.Max(), "ms", o.node_timeout_ms + 1000, std::nullopt, "");
  } else {
    report->Info(what + ", median" + n, s.total.Median(), "ms");
    report->Info(what + ", max", s.total.Max(), "ms");
  }
  if (s.dead.empty()) return;
  std::string of = fmt::format("{} MiB{}, ", mib, power_loss ? " (power loss)" : "");
  std::string parts_n = s.without_parts > 0 ? fmt::format(" (n={} of {})", s.dead.size(), s.total.size()) : "";
  report->Info(of + (power_loss ? "cable cut" : "SIGKILL") + " -> head marks the node DEAD, median" + parts_n,
               s.dead.Median(), "ms");
  report->Info(of + "DEAD -> attempt 0 over (rank 1 stopped, exit reported), median", s.ended.Median(), "ms");
  report->Info(of + "attempt 0 over -> attempt 1 placed, median", s.placed.Median(), "ms");
  if (tar_both.empty()) {
    report->Info(of + "placed -> restored on both nodes (port, launch, download, write, sync), median",
                 s.restored.Median(), "ms");
  } else {
    report->Info(of + "placed -> restored on both nodes (port, launch, download, write, sync), median",
                 s.restored.Median(), "ms", tar_both.Median(), "tar+nc to both at once, median");
  }
  report->Info(of + "restored -> both ranks running (spawn), median", s.running.Median(), "ms");
  report->Info(of + "restore rate per node (checkpoint bytes / placed -> restored), median",
               MiBps(s.bytes, s.restored.Median()), "MiB/s");
}

double Median(std::vector<double> v) {
  Samples s;
  for (double x : v) s.Add(x);
  return s.empty() ? 0 : s.Median();
}

double Cost(const UploadCost& u) { return (u.during_mean_ms / u.base_mean_ms - 1) * 100; }

// `full`: the same run at full speed first, or null.
void UploadRows(Report* report, const UploadCost& u, const UploadCost* full, int mib, bool core_per_machine) {
  report->Check(fmt::format("step time while a {} MiB checkpoint uploads (default upload_rate), mean, over steps "
                            "without{}",
                            mib, core_per_machine ? " (the rank's machine on a core of its own)" : ""),
                Cost(u), "%", 5, std::nullopt, "");
  if (full) {
    report->Info("  the same at full speed (upload_rate: unlimited), over its steps without", Cost(*full), "%");
    report->Info("  at full speed: rank's share of the wall time on a CPU during uploads",
                 full->during_cpu_ms / full->during_mean_ms * 100, "%", full->base_cpu_ms / full->base_mean_ms * 100,
                 "without");
    double upload = Median(full->upload_ms);
    report->Info("  at full speed: upload, median", upload, "ms");
    report->Info("  at full speed: upload rate, median", MiBps(full->bytes, upload), "MiB/s");
  }
  report->Info(fmt::format("step time during uploads, mean (n={} steps, {} uploads)", u.during_steps.size(),
                           u.upload_ms.size()),
               u.during_mean_ms, "ms", u.base_mean_ms, fmt::format("without, n={}", u.base_steps.size()));
  report->Info("step time during uploads, median", u.during_steps.Median(), "ms", u.base_steps.Median(),
               "without, median");
  report->Info("step time during uploads, p90", u.during_steps.Percentile(90), "ms", u.base_steps.Percentile(90),
               "without, p90");
  report->Info("step time during uploads, max", u.during_steps.Max(), "ms", u.base_steps.Max(), "without, max");
  report->Info("rank's CPU time per step during uploads, mean", u.during_cpu_ms, "ms", u.base_cpu_ms, "without");
  report->Info("rank's share of the wall time on a CPU during uploads (CPU / wall per step)",
               u.during_cpu_ms / u.during_mean_ms * 100, "%", u.base_cpu_ms / u.base_mean_ms * 100, "without");
  double upload = Median(u.upload_ms);
  report->Info(fmt::format("{} MiB upload: report -> agent logs stored, median", mib), upload, "ms");
  report->Info("upload rate, median", MiBps(u.bytes, upload), "MiB/s");
  report->Info("the rank's own save (write, fsync, rename), median", Median(u.save_ms), "ms");
  report->Info("node's clusterd CPU per upload, median", Median(u.agent_cpu_ms), "ms", upload, "upload wall time");
  report->Info("  of which its threads at nice 0 (gRPC's, not the uploader's), median", Median(u.agent_nice0_cpu_ms),
               "ms");
  report->Info("head's clusterd CPU per upload, median", Median(u.head_cpu_ms), "ms", upload, "upload wall time");
  report->Info("  of which its threads at nice 0 (not its ingest threads), median", Median(u.head_nice0_cpu_ms), "ms");
}

void ReuploadRows(Report* report, const Reupload& r, int mib) {
  report->Check(fmt::format("re-upload of the unchanged {} MiB checkpoint, hash cache warm, median (n={})", mib,
                            r.warm.size()),
                r.warm.Median(), "ms", 50, r.cold_ms, "no cache: hashes it all");
  report->Check("re-upload, hash cache warm, max", r.warm.Max(), "ms", 50, std::nullopt, "");
  report->Info("re-uploads: bytes read to hash with the cache warm (max)", static_cast<double>(r.warm_hashed_max), "");
  report->Info("re-uploads: bytes sent (max, the store has every piece)", static_cast<double>(r.sent_max), "");
  report->Info(fmt::format("the same {} MiB in a new folder (next epoch's unchanged file), cache warm", mib),
               r.copy_ms, "ms", r.cold_ms, "no cache");
  report->Info("  bytes it read to hash", static_cast<double>(r.copy_hashed), "");
}

}  // namespace

bool RunCheckpoints(const CheckpointOptions& o, Report* report) {
  std::string why;
  if (!testing::SimNetwork::Available(&why)) {
    report->Failed("machines", why);
    return false;
  }
  ScratchDir scratch_dir("checkpoints-bench");
  if (!scratch_dir.ok()) {
    report->Failed("setup", "mkdtemp failed");
    return false;
  }
  const std::string& scratch = scratch_dir.path();

  std::unique_ptr<SimCluster> cluster;
  try {
    cluster = std::make_unique<SimCluster>(std::vector<std::string>{"w1", "w2", "w3"});
  } catch (const std::exception& e) {
    report->Failed("machines", e.what());
    return false;
  }
  std::string error;
  if (!cluster->Start(&error, {"--num-cpus", "1"}, {"--node-timeout-ms", std::to_string(o.node_timeout_ms)}) ||
      !MakeJobFolder(*cluster, CKPT_RANK_BIN, &error)) {
    report->Failed("cluster", error);
    return false;
  }
  std::error_code ec;
  for (testing::Machine* w : cluster->workers) fs::create_directories(w->HostPath(kStamps), ec);

  FailoverSamples small, large, power;
  if (o.parts.count("failover") || o.parts.count("power_loss")) {
    struct Kind {
      int mib;
      bool power_loss;
      FailoverSamples* samples;
    };
    int trials = o.parts.count("failover") ? o.trials : 0, power_trials = o.parts.count("power_loss") ? o.power_loss : 0;
    for (int trial = 0; trial < std::max(trials, power_trials); ++trial) {
      for (Kind k : {Kind{o.small_mib, false, &small}, Kind{o.large_mib, false, &large},
                     Kind{o.large_mib, true, &power}}) {
        if (trial >= (k.power_loss ? power_trials : trials)) continue;
        FailoverTimes t;
        std::string what = fmt::format("failover {} MiB{}, trial {}", k.mib, k.power_loss ? " (power loss)" : "", trial);
        if (!RunFailover(*cluster, k.mib, trial, k.power_loss, &t, &error)) {
          report->Failed(what, error);
          return false;
        }
        k.samples->Add(t);
        std::cerr << fmt::format(
            "checkpoints_bench: {}: {:.1f} ms (killed at {:.3f}; dead {:.1f}, attempt over {:.1f}, placed {:.1f}, "
            "restored {:.1f}, running {:.1f}){}\n",
            what, t.TotalMs(), static_cast<double>(t.kill_ns) / 1e9, t.Ms(t.kill_ns, t.dead_ns),
            t.Ms(t.dead_ns, t.ended_ns), t.Ms(t.ended_ns, t.placed_ns), t.Ms(t.placed_ns, t.restored_ns),
            t.Ms(t.restored_ns, t.running_ns), t.parts ? "" : " (some log lines missing)");
      }
    }
  }

  UploadCost upload, full_speed;
  Reupload reupload;
  Samples cp, tar, tar_both;
  bool uploaded = false;
  if (o.parts.count("upload")) {
    UploadCostRun run{o.large_mib, o.rounds, o.baseline_ms, o.core_per_machine != 0, "", "steps"};
    if (!o.paced_only) {
      UploadCostRun full = run;
      full.upload_rate = "unlimited";
      full.tag = "steps-full";
      bool ok = RunUploadCost(*cluster, full, &full_speed, &error);
      if (!full_speed.job_id.empty()) ClearJob(*cluster, full_speed.job_id, full_speed.tag);
      if (!ok) {
        report->Failed("upload cost at full speed", error);
        return false;
      }
    }
    if (!RunUploadCost(*cluster, run, &upload, &error)) {
      report->Failed("upload cost", error);
      if (!upload.job_id.empty()) ClearJob(*cluster, upload.job_id, upload.tag);
      return false;
    }
    std::cerr << fmt::format("checkpoints_bench: steps {:.2f} ms without an upload (n={}), {:.2f} ms during (n={})\n",
                             upload.base_mean_ms, upload.base_steps.size(), upload.during_mean_ms,
                             upload.during_steps.size());
    bool ok = RunReupload(*cluster, upload, o.warm, &reupload, &error);
    if (!ok) report->Failed("re-upload", error);
    ok = ok && RunBaselines(*cluster, upload, o.copies, scratch, &cp, &tar, &tar_both, &error);
    if (ok) {
      std::cerr << fmt::format("checkpoints_bench: re-upload {:.1f} ms warm, {:.1f} ms cold; cp {:.1f} ms, "
                               "tar+nc {:.1f} ms, to both {:.1f} ms\n",
                               reupload.warm.Median(), reupload.cold_ms, cp.Median(), tar.Median(), tar_both.Median());
    } else if (!report->any_failed()) {
      report->Failed("baselines", error);
    }
    ClearJob(*cluster, upload.job_id, upload.tag);
    if (!ok) return false;
    uploaded = true;
  }

  if (!large.total.empty()) FailoverRows(report, o.large_mib, false, large, o, tar, tar_both);
  if (!small.total.empty()) FailoverRows(report, o.small_mib, false, small, o, Samples(), Samples());
  if (!power.total.empty()) FailoverRows(report, o.large_mib, true, power, o, Samples(), tar_both);
  if (uploaded) {
    report->Info(fmt::format("cp -r of the {} MiB checkpoint folder on one node, + sync, median (n={})", o.large_mib,
                             cp.size()),
                 cp.Median(), "ms");
    report->Info(fmt::format("tar+nc of it to another node, + sync, median (n={})", tar.size()), tar.Median(), "ms");
    report->Info(fmt::format("tar+nc of it to both other nodes at once, + sync, median (n={})", tar_both.size()),
                 tar_both.Median(), "ms");
    UploadRows(report, upload, o.paced_only ? nullptr : &full_speed, o.large_mib, o.core_per_machine != 0);
    ReuploadRows(report, reupload, o.large_mib);
  }
  return true;
}

}  // namespace clusterd::bench
