// The rank runner driven like the head's core, for its unit tests: a fake
// clock, a fake launcher and a send that records what it is given, or
// refuses it while `connected` is false (the head away, or its queue full).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/file_util.h"
#include "daemon/agent/rank_runner.h"
#include "fake_launcher.h"
#include "head_harness.h"
#include "temp_tree.h"

namespace clusterd::testing {

struct Runner {
  TempTree dir;
  FakeClock clock;
  FakeLauncher launcher;
  bool connected = true;
  std::vector<AgentMessage> sent;
  std::unique_ptr<RankRunner> runner;

  explicit Runner(std::string python_path = "") {
    RankRunner::Options options;
    options.python_path = std::move(python_path);
    options.logs_dir = dir.Path("logs");
    options.ranks_dir = dir.Path("ranks");
    options.socket_path = dir.Path("agent.sock");
    options.node_ip = "127.0.0.1";
    runner = std::make_unique<RankRunner>(options, &clock, &launcher, [this](const AgentMessage& m) {
      if (connected) sent.push_back(m);
      return connected;
    });
  }

  static LaunchRanks Launch(const std::string& job, int attempt, std::vector<int> ranks) {
    LaunchRanks launch;
    launch.set_job_id(job);
    launch.set_attempt(attempt);
    launch.add_argv("train");
    for (int r : ranks) launch.add_ranks()->set_rank(r);
    return launch;
  }

  std::vector<RankExited> Exits() const {
    std::vector<RankExited> out;
    for (const auto& m : sent) {
      if (m.has_rank_exited()) out.push_back(m.rank_exited());
    }
    return out;
  }
  std::vector<RankStarted> Starts() const {
    std::vector<RankStarted> out;
    for (const auto& m : sent) {
      if (m.has_rank_started()) out.push_back(m.rank_started());
    }
    return out;
  }
  std::string Logs() const {
    std::string out;
    for (const auto& m : sent) {
      if (m.has_log()) out += m.log().data();
    }
    return out;
  }
  // Files in the ranks folder: {that record a rank, in all} (a free slot's is empty).
  std::pair<int, int> RankRecords() const {
    int recorded = 0, files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.Path("ranks"))) {
      ++files;
      // What `clusterd stop` reads: a free slot is blank (the fake pids
      // name no process, so their records hold zeros).
      auto text = ReadFileTrimmed(entry.path());
      recorded += text.ok() && !text->empty() ? 1 : 0;
    }
    return {recorded, files};
  }
};

}  // namespace clusterd::testing
