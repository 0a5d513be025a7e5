#include "ckpt_jobs.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace clusterd::bench {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool MakeJobFolder(SimCluster& cluster, const std::string& rank_program, std::string* error) {
  std::error_code ec;
  std::string folder = cluster.client.HostPath(kJobFolder);
  fs::create_directories(folder, ec);
  fs::copy_file(rank_program, folder + "/ckpt_rank", fs::copy_options::overwrite_existing, ec);
  if (ec) {
    *error = "cannot copy " + rank_program + " to the client: " + ec.message();
    return false;
  }
  fs::permissions(folder + "/ckpt_rank", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                             fs::perms::others_read | fs::perms::others_exec, ec);
  return true;
}

bool SubmitJob(SimCluster& cluster, const JobShape& shape, const std::string& tag, std::string* job_id,
               std::string* error) {
  std::string file = "/tmp/ckb/" + tag + ".yaml";
  std::ofstream(cluster.client.HostPath(file))
      << fmt::format("name: ckpt-{}\n"
                     "entrypoint: [./ckpt_rank, {}, '{}']\n"
                     "working_dir: {}\n"
                     "num_workers: {}\n"
                     "placement: STRICT_SPREAD\n"
                     "max_failures: {}\n"
                     "priority: {}\n"
                     "resources_per_worker: {{CPU: 1}}\n",
                     tag, shape.mode, shape.mib, kJobFolder, shape.workers, shape.max_failures, shape.priority);
  std::vector<std::string> args = {"submit", file, "--set", "env.OUT_DIR=" + kOutRoot + "/" + tag};
  if (!shape.upload_rate.empty()) args.insert(args.end(), {"--set", "checkpoint.upload_rate=" + shape.upload_rate});
  for (const std::string& set : shape.sets) args.insert(args.end(), {"--set", set});
  testing::RunResult submit = cluster.Ctl(args, 60s);
  std::smatch match;
  static const std::regex submitted("Submitted job (\\S+)");
  if (submit.exit_code != 0 || !std::regex_search(submit.out, match, submitted)) {
    *error = tag + ": clusterctl submit failed (" + std::to_string(submit.exit_code) + "): " + submit.err + submit.out;
    return false;
  }
  *job_id = match[1];
  return true;
}

std::optional<RankStart> FindStart(SimCluster& cluster, const std::string& tag, int attempt, int rank,
                                   const testing::Machine* skip) {
  for (testing::Machine* w : cluster.workers) {
    if (w == skip) continue;
    std::ifstream in(w->HostPath(fmt::format("{}/{}/start-a{}-r{}", kOutRoot, tag, attempt, rank)));
    RankStart start;
    if (in >> start.ns >> start.found >> start.bytes >> start.checkpoint_dir) {
      start.machine = w;
      return start;
    }
  }
  return std::nullopt;
}

void ClearJob(SimCluster& cluster, const std::string& job_id, const std::string& tag) {
  cluster.Ctl({"stop", job_id}, 30s);
  testing::WaitFor(
      [&] {
        std::string state = cluster.JobState(job_id);
        return state == "STOPPED" || state == "FAILED" || state == "SUCCEEDED" || state.empty();
      },
      30s, 100ms);
  cluster.Ctl({"delete", job_id}, 30s);
  std::error_code ec;
  for (testing::Machine* w : cluster.workers) {
    fs::remove_all(w->HostPath(kOutRoot + "/" + tag), ec);
    // Working folders are /tmp/clusterd/work/<agent pid>/<job id>.
    for (const auto& agent : fs::directory_iterator(w->HostPath("/tmp/clusterd/work"), ec)) {
      fs::remove_all(agent.path() / job_id, ec);
    }
  }
}

std::optional<pid_t> DaemonPid(testing::Machine& machine) {
  for (pid_t pid : machine.Pids()) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string comm;
    if (std::getline(in, comm) && comm == "clusterd") return pid;
  }
  return std::nullopt;
}

}  // namespace clusterd::bench
