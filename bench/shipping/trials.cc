#include "trials.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

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

// "START END\n" from stamp_run.
bool ReadStamp(const std::string& path, int64_t* start, int64_t* end) {
  std::istringstream in(ReadAll(path));
  return static_cast<bool>(in >> *start >> *end);
}

std::string JobFile(const std::string& mode) {
  return "name: shipping-bench\n"
         "entrypoint: [\"./bin/noop_rank\"]\n"
         "working_dir: " + kFolder + "\n"
         "working_dir_mode: " + mode + "\n"
         "num_workers: 1\n"
         "resources_per_worker: {CPU: 1}\n";
}

uint64_t FileBytes(const std::string& root) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(root, ec)) {
    if (entry.is_regular_file()) bytes += entry.file_size();
  }
  return bytes;
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
  std::string port = std::to_string(7100 + round);
  std::string dest = kTarDest + "/" + std::to_string(round);
  std::string done = kTimes + "/" + name + "-done";
  std::string start = kTimes + "/" + name;
  std::error_code ec;
  fs::create_directories(c_->w1.HostPath(dest), ec);
  std::string log = scratch_ + "/" + name + ".log";
  pid_t listener = c_->w1.Spawn(
      {"/bin/sh", "-c", "nc -l " + port + " | tar -C " + dest + " -xf - && " + stamp_run_ + " " + done}, {}, log, log);
  bool listening = testing::WaitFor(
      [&] { return !c_->w1.Run({"ss", "-Hltn", "sport = :" + port}).out.empty(); }, 10s, 10ms);
  testing::RunResult sent;
  if (listening) {
    sent = c_->client.Run({stamp_run_, start, "/bin/sh", "-c",
                           "tar -C " + kFolder + " -cf - . | nc -N " + c_->w1.ip() + " " + port},
                          {}, 120s);
  }
  int status = -1;
  bool exited = testing::WaitFor([&] { return waitpid(listener, &status, WNOHANG) == listener; }, 60s, 1ms);
  if (!exited) {
    kill(listener, SIGKILL);
    waitpid(listener, &status, 0);
  }
  int64_t ignored = 0;
  bool ok = listening && sent.exit_code == 0 && exited && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
            ReadStamp(c_->client.HostPath(start), &times->start_ns, &ignored) &&
            ReadStamp(c_->w1.HostPath(done), &times->done_ns, &ignored);
  // What arrived must be the whole folder.
  uint64_t bytes = FileBytes(c_->w1.HostPath(dest)), expect_bytes = FileBytes(c_->client.HostPath(kFolder));
  if (ok && bytes != expect_bytes) {
    *error = name + ": w1 received " + std::to_string(bytes) + " bytes of files, not " + std::to_string(expect_bytes);
    ok = false;
  } else if (!ok) {
    *error = name + ": the tar | nc copy failed: " + sent.err + ReadAll(log);
  }
  fs::remove_all(c_->w1.HostPath(dest), ec);
  return ok;
}

}  // namespace clusterd::bench
