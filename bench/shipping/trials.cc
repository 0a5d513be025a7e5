#include "trials.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "copy_baselines.h"

namespace clusterd::bench {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kTimes = "/tmp/ship/times";  // stamp files, client and w1
const std::string kOut = "/tmp/ship/out";      // OUT_DIR of each rank, w1
const std::string kTarDest = "/tmp/ship/tar";  // w1

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string JobFile(const std::string& mode) {
  return "name: shipping-bench\n"
         "entrypoint: [\"./bin/noop_rank\"]\n"
         "working_dir: " + kFolder + "\n"
         "working_dir_mode: " + mode + "\n"
         "num_workers: 1\n"
         "resources_per_worker: {CPU: 1}\n";
}

}  // namespace

Trials::Trials(ShipCluster* cluster, std::string stamp_run, std::string scratch)
    : c_(cluster), stamp_run_(std::move(stamp_run)), scratch_(std::move(scratch)) {}

bool Trials::Setup(std::string* error) {
  std::error_code ec;
  for (testing::Machine* m : {&c_->client, &c_->w1}) {
    for (const std::string& dir : {kTimes, kOut, kTarDest}) fs::create_directories(m->HostPath(dir), ec);
  }
  std::ofstream(c_->client.HostPath(kShipJob)) << JobFile("ship");
  std::ofstream(c_->client.HostPath(kSharedJob)) << JobFile("shared");
  testing::RunResult copied = testing::Run({"/bin/cp", "-a", c_->client.HostPath(kFolder), c_->w1.HostPath("/tmp/ship/")});
  if (copied.exit_code != 0) *error = "cannot copy the folder to w1: " + copied.err;
  return copied.exit_code == 0;
}

bool Trials::MakeFirstSubmit(int round, std::string* error) {
  std::ofstream(c_->client.HostPath(kFolder + "/.bench-round")) << "round " << round << "\n";
  std::error_code ec;
  fs::remove_all(c_->client.HostPath(ShipCluster::HashCacheDir()), ec);
  if (ec) *error = "cannot clear the hash cache: " + ec.message();
  return !ec;
}

bool Trials::Submit(const std::string& kind, int round, const std::string& job_file, Times* times,
                    std::string* error) {
  std::string name = kind + "-" + std::to_string(round);
  std::string out_dir = kOut + "/" + name;
  std::string stamp = kTimes + "/" + name;
  std::error_code ec;
  fs::create_directories(c_->w1.HostPath(out_dir), ec);
  testing::RunResult submit = c_->client.Run(
      {stamp_run_, stamp, "clusterctl", "submit", job_file, "--set", "env.OUT_DIR=" + out_dir}, c_->ClientEnv(), 120s);
  std::smatch match;
  static const std::regex submitted("Submitted job (\\S+)");
  if (submit.exit_code != 0 || !std::regex_search(submit.out, match, submitted)) {
    *error = name + ": clusterctl submit failed (" + std::to_string(submit.exit_code) + "): " + submit.err + submit.out;
    return false;
  }
  times->job_id = match[1];
  if (!ReadStamp(c_->client.HostPath(stamp), &times->start_ns, &times->returned_ns)) {
    *error = name + ": no stamp from stamp_run";
    return false;
  }
  std::string rank_file = c_->w1.HostPath(out_dir + "/rank-0");
  if (!testing::WaitFor([&] { return fs::exists(rank_file); }, 60s, 1ms)) {
    *error = name + ": job " + times->job_id + " never started its rank on w1 (state " + c_->JobState(times->job_id) + ")";
    return false;
  }
  std::istringstream(ReadAll(rank_file)) >> times->done_ns;
  std::string state;
  testing::WaitFor([&] { return (state = c_->JobState(times->job_id)) == "SUCCEEDED"; }, 30s, 50ms);
  if (state != "SUCCEEDED") {
    *error = name + ": job " + times->job_id + " ended " + (state.empty() ? "unknown" : state);
    return false;
  }
  return times->done_ns > 0;
}

bool Trials::Tar(int round, Times* times, std::string* error) {
  std::string name = "tar-" + std::to_string(round);
  std::string dest = kTarDest + "/" + std::to_string(round);
  std::error_code ec;
  fs::create_directories(c_->w1.HostPath(dest), ec);
  TarOverNc copy;
  copy.from = &c_->client;
  copy.src = kFolder;
  copy.to = &c_->w1;
  copy.dest = dest;
  copy.port = 7100 + round;
  copy.stamp_run = stamp_run_;
  copy.stamps = kTimes;
  copy.name = name;
  copy.log = scratch_ + "/" + name + ".log";
  StampedTimes stamped;
  bool ok = TimeTarOverNc(copy, &stamped, error);
  times->start_ns = stamped.start_ns;
  times->done_ns = stamped.done_ns;
  // What arrived must be the whole folder.
  uint64_t bytes = FileBytes(c_->w1.HostPath(dest)), expect_bytes = FileBytes(c_->client.HostPath(kFolder));
  if (ok && bytes != expect_bytes) {
    *error = name + ": w1 received " + std::to_string(bytes) + " bytes of files, not " + std::to_string(expect_bytes);
    ok = false;
  }
  fs::remove_all(c_->w1.HostPath(dest), ec);
  return ok;
}

}  // namespace clusterd::bench
