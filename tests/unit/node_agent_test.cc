// A whole node agent (its loop, link, runner, report socket) against the
// head's real agent service, its ranks started by a fake Launcher: a job
// is placed, launched and running; then the agent stops, and the head hears
// it drain, hears the rank's end, and puts the node's end down to the stop.
#include <signal.h>

#include <catch2/catch.hpp>

#include <mutex>
#include <set>

#include "agent_head_server.h"
#include "daemon/agent/node_agent.h"
#include "fake_launcher.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// The fake, for a launcher shared by the agent's loop and the test thread;
// a "process" ends when it is sent SIGTERM or SIGKILL.
class SharedFakeLauncher : public Launcher {
 public:
  Result<pid_t> Spawn(const SpawnRequest& request) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto pid = fake_.Spawn(request);
    if (pid.ok()) running_.insert(*pid);
    return pid;
  }
  void SignalGroup(pid_t pid, int signal_number) override {
    std::lock_guard<std::mutex> lock(mutex_);
    fake_.SignalGroup(pid, signal_number);
    if ((signal_number == SIGTERM || signal_number == SIGKILL) && running_.erase(pid)) {
      fake_.Exit(pid, 0, signal_number);
    }
  }
  std::vector<ChildExit> Reap() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return fake_.Reap();
  }
  pid_t GroupOf(pid_t pid) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return fake_.GroupOf(pid);
  }
  pid_t ParentOf(pid_t pid) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return fake_.ParentOf(pid);
  }
  int KillDescendants() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++descendant_sweeps_;
    return 0;
  }
  bool MayHaveLeftovers() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return fake_.MayHaveLeftovers();
  }
  int KillLeftovers(const std::string& job_id, int attempt) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return fake_.KillLeftovers(job_id, attempt);
  }

  size_t Spawned() {
    std::lock_guard<std::mutex> lock(mutex_);
    return fake_.spawned.size();
  }
  int SignalsTo(pid_t pid, int signal_number) {
    std::lock_guard<std::mutex> lock(mutex_);
    return fake_.SignalsTo(pid, signal_number);
  }
  pid_t FirstPid() {
    std::lock_guard<std::mutex> lock(mutex_);
    return fake_.spawned.empty() ? 0 : fake_.spawned[0].first;
  }
  int DescendantSweeps() {
    std::lock_guard<std::mutex> lock(mutex_);
    return descendant_sweeps_;
  }

 private:
  std::mutex mutex_;
  FakeLauncher fake_;
  std::set<pid_t> running_;
  int descendant_sweeps_ = 0;
};

}  // namespace

TEST_CASE("a node agent launches the head's ranks through its Launcher, and on stop drains, ends them and says so",
          "[node_agent]") {
  QuietLogs quiet;
  AgentHeadServer head(0);
  TempTree dir;
  SharedFakeLauncher launcher;
  NodeAgentOptions options;
  options.head_address = "127.0.0.1:" + std::to_string(head.port);
  options.token = kToken;
  options.node_name = "n1";
  options.node_ip = "127.0.0.1";
  options.num_cpus = 2;
  options.num_gpus = 0;
  options.memory_bytes = 1e9;
  options.config.heartbeat_ms = 100;
  options.config.stop_grace_ms = 2000;
  options.session_dir = dir.Path("session");
  options.socket_path = dir.Path("agent.sock");
  options.package_dir = dir.Path("packages");
  options.work_dir = dir.Path("work/1");
  options.hash_dir = dir.Path("hashes");
  options.launcher = &launcher;
  NodeAgent agent(options, nullptr);
  REQUIRE(agent.Start(10'000).ok());
  REQUIRE(Eventually([&] { return head.StateOf("n1") == ALIVE; }));

  SubmitJobRequest request;
  JobSpec* spec = request.mutable_spec();
  spec->set_name("train");
  spec->add_entrypoint("/bin/train");
  spec->set_working_dir(dir.root());
  spec->set_working_dir_mode(SHARED);
  spec->set_num_workers(1);
  (*spec->mutable_resources_per_worker()->mutable_amounts())[kCpu] = 1;
  auto job = head.loop.Call<Result<std::string>>([&] { return head.core.jobs().Submit(request); });
  REQUIRE(job.ok());
  auto state = [&] { return head.loop.Call<JobState>([&] { return head.core.jobs().Get(*job)->state(); }); };
  // Placed, its port reserved on the node, launched, and heard to run.
  REQUIRE(Eventually([&] { return launcher.Spawned() == 1 && state() == RUNNING; }));
  pid_t pid = launcher.FirstPid();

  agent.Stop();
  REQUIRE(launcher.SignalsTo(pid, SIGTERM) == 1);
  REQUIRE(launcher.DescendantSweeps() >= 1);
  // The head heard the drain, then the rank's end, then the stream close.
  REQUIRE(Eventually([&] { return head.StateOf("n1") == DEAD; }));
  ClusterStatus status = head.loop.Call<ClusterStatus>([&] { return head.core.GetStatus(); });
  REQUIRE(status.nodes(0).state_reason().find("its node agent is stopping") != std::string::npos);
  REQUIRE(Eventually([&] { return state() != RUNNING; }));
  JobInfo info = head.loop.Call<JobInfo>([&] { return *head.core.jobs().Get(*job); });
  REQUIRE(info.attempts_size() >= 1);
  INFO(info.reason());
  REQUIRE(info.reason().find("signal") != std::string::npos);
}
