// What the jobs tests share: job files in the cluster's folder (shared
// working_dir, no package), submitting, waiting, a rank's environment dump,
// and a head with two workers on fast timing.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "harness.h"
#include "job_json.h"

namespace clusterd::testing {

using namespace std::chrono_literals;


inline std::string WriteJobFile(Cluster& cluster, const std::string& name, const std::string& body) {
  std::string path = cluster.temp_dir() + "/" + name + ".yaml";
  std::ofstream(path) << "name: " << name << "\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n" << body;
  return path;
}

inline std::string Submit(Cluster& cluster, const std::string& file, const std::map<std::string, std::string>& env = {}) {
  RunResult r = cluster.Ctl({"submit", file, "--json"}, std::chrono::seconds(30), env);
  REQUIRE(r.exit_code == 0);
  return SubmittedJobId(r);
}

inline JobInfo GetJob(Cluster& cluster, const std::string& id) { return ParseJson<JobInfo>(cluster.Ctl({"job", id, "--json"})); }

inline JobInfo WaitEnd(Cluster& cluster, const std::string& id, std::chrono::milliseconds limit = 60s) {
  return WaitUntilFinal(cluster, id, limit);
}

inline std::map<std::string, std::string> ReadEnv(const std::string& path) {
  std::map<std::string, std::string> env;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

inline void StartThreeNodes(Cluster& cluster, const std::vector<std::string>& head_flags = {"--num-cpus", "2", "--num-gpus", "2"}) {
  std::vector<std::string> timing = {"--heartbeat-ms", "200", "--node-timeout-ms", "1000"};
  std::vector<std::string> head = head_flags;
  head.insert(head.end(), timing.begin(), timing.end());
  REQUIRE(cluster.StartHead(head).exit_code == 0);
  for (const char* name : {"w1", "w2"}) {
    std::vector<std::string> flags = {"--num-cpus", "2", "--num-gpus", "2"};
    flags.insert(flags.end(), timing.begin(), timing.end());
    RunResult started = cluster.StartWorker(name, flags);
    INFO(started.err);
    REQUIRE(started.exit_code == 0);
  }
}

}  // namespace clusterd::testing
