#include "failover_trial.h"

#include <google/protobuf/util/json_util.h>
#include <time.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "cluster.pb.h"

namespace clusterd::bench {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const std::string kRankProgram = "/tmp/hab/noop_rank";  // on every worker
const std::string kJobFolder = "/tmp/hab";               // on the client: the job files
const std::string kOutRoot = "/tmp/hab/out";             // on the workers: OUT_DIR is kOutRoot/TAG

int64_t RealtimeNs() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

double MsBetween(int64_t from_ns, int64_t to_ns) { return static_cast<double>(to_ns - from_ns) / 1e6; }

// The nodes' incarnations by name, from `clusterctl status --json`, ALIVE
// ones only; nullopt when the call failed.
std::optional<std::map<std::string, int64_t>> AliveIncarnations(const FailoverTarget& target,
                                                                std::chrono::milliseconds timeout) {
  testing::RunResult result = target.ctl({"status", "--json"}, timeout);
  ClusterStatus status;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (result.exit_code != 0 || !google::protobuf::util::JsonStringToMessage(result.out, &status, options).ok()) {
    return std::nullopt;
  }
  std::map<std::string, int64_t> alive;
  for (const NodeInfo& node : status.nodes()) {
    if (node.state() == ALIVE) alive[node.name()] = node.incarnation();
  }
  return alive;
}

// The latest of the ranks' start times, once every rank has written its
// file on some worker.
std::optional<int64_t> RanksStarted(const FailoverTarget& target, const std::string& tag) {
  int64_t latest = 0;
  for (size_t rank = 0; rank < target.workers.size(); ++rank) {
    std::optional<int64_t> started;
    for (testing::Machine* w : target.workers) {
      std::ifstream in(w->HostPath(fmt::format("{}/{}/rank-{}", kOutRoot, tag, rank)));
      int64_t ns = 0;
      if (in >> ns) {
        started = ns;
        break;
      }
    }
    if (!started) return std::nullopt;
    latest = std::max(latest, *started);
  }
  return latest;
}

}  // namespace

bool InstallRankProgram(const FailoverTarget& target, const std::string& noop_rank, std::string* error) {
  for (testing::Machine* w : target.workers) {
    std::error_code ec;
    fs::create_directories(w->HostPath(kOutRoot), ec);
    fs::copy_file(noop_rank, w->HostPath(kRankProgram), fs::copy_options::overwrite_existing, ec);
    if (ec) {
      *error = "cannot copy " + noop_rank + " to " + w->name() + ": " + ec.message();
      return false;
    }
    fs::permissions(w->HostPath(kRankProgram), fs::perms::owner_all | fs::perms::group_read |
                                                   fs::perms::group_exec | fs::perms::others_read |
                                                   fs::perms::others_exec, ec);
  }
  return true;
}

bool RunFailoverTrial(const FailoverTarget& target, const std::string& tag, std::chrono::milliseconds limit,
                      FailoverTimes* times, std::string* error) {
  auto before = AliveIncarnations(target, 10s);
  if (!before || before->size() < target.workers.size()) {
    *error = tag + ": before the kill, clusterctl status did not list every worker ALIVE";
    return false;
  }
  for (testing::Machine* w : target.workers) {
    std::error_code ec;
    fs::create_directories(w->HostPath(kOutRoot + "/" + tag), ec);
  }
  const std::string job_file = fmt::format("{}/{}.yaml", kJobFolder, tag);
  {
    std::error_code ec;
    fs::create_directories(target.client->HostPath(kJobFolder), ec);
    std::ofstream(target.client->HostPath(job_file))
        << fmt::format("name: {}\n"
                       "entrypoint: [{}]\n"
                       "num_workers: {}\n"
                       "placement: STRICT_SPREAD\n"
                       "resources_per_worker: {{CPU: 1}}\n",
                       tag, kRankProgram, target.workers.size());
  }

  const int64_t killed_ns = RealtimeNs();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  target.kill();

  // The status clock: answering, then every worker registered again.
  std::thread status_poll([&] {
    while (std::chrono::steady_clock::now() < deadline) {
      auto alive = AliveIncarnations(target, 2s);
      const int64_t now = RealtimeNs();
      if (alive && times->answering_ms < 0) times->answering_ms = MsBetween(killed_ns, now);
      if (alive) {
        bool all = true;
        for (testing::Machine* w : target.workers) {
          auto it = alive->find(w->name());
          auto was = before->find(w->name());
          if (it == alive->end() || was == before->end() || it->second <= was->second) all = false;
        }
        if (all) {
          times->registered_ms = MsBetween(killed_ns, now);
          return;
        }
      }
      std::this_thread::sleep_for(20ms);
    }
  });
  // The job's clock: submitted as soon as a head takes it, then its ranks.
  // A try whose call ran out of time may have been taken all the same: a
  // second job then writes the same start files later, and the first
  // complete set read is the earlier one.
  static const std::regex submitted("Submitted job (\\S+)");
  bool taken = false;
  while (!taken && std::chrono::steady_clock::now() < deadline) {
    ++times->submit_tries;
    testing::RunResult submit =
        target.ctl({"submit", job_file, "--set", "env.OUT_DIR=" + kOutRoot + "/" + tag}, 5s);
    std::smatch match;
    taken = submit.exit_code == 0 && std::regex_search(submit.out, match, submitted);
    if (!taken) std::this_thread::sleep_for(20ms);
  }
  while (taken && std::chrono::steady_clock::now() < deadline) {
    if (auto started = RanksStarted(target, tag)) {
      times->ranks_ms = MsBetween(killed_ns, *started);
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  status_poll.join();
  if (!target.recover(error)) {
    *error = tag + ": " + *error;
    return false;
  }
  return true;
}

}  // namespace clusterd::bench
