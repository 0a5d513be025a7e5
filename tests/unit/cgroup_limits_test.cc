// What a job asks for holds on its node (cgroup_limits.h, attempt_cgroup.h):
// the files and values each limit becomes, and, with real processes in
// real cgroups (v2 where this machine delegates a subtree, else the v1
// controllers), a rank over its memory killed by the kernel and counted,
// a fork bomb stopped at the attempt's pids limit, CPU weights and quotas
// written, and what an agent that is gone left behind killed and removed.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "daemon/agent/attempt_cgroup.h"
#include "daemon/agent/cgroup_fs.h"
#include "daemon/agent/cgroup_limits.h"

using namespace clusterd;

namespace {

std::string Values(const std::vector<CgroupWrite>& writes) {
  std::string out;
  for (const CgroupWrite& write : writes) out += write.file + "=" + write.value + (write.optional ? "?" : "") + " ";
  return out;
}

// The node's containment with the limits asked for, in a root named for
// this test process (removed at the end).
struct Node {
  Containment containment;
  explicit Node(const LimitSettings& settings, const std::string& name = "") {
    auto detected = Containment::Detect("auto", name.empty() ? "clusterd-unit-" + std::to_string(getpid()) : name,
                                        settings);
    REQUIRE(detected.ok());
    containment = *detected;
  }
  ~Node() { containment.RemoveRoot(); }
  AttemptCgroup Attempt(const std::string& name) const {
    return AttemptCgroup(containment.kind, containment.root, name, containment.limits);
  }
};

// Forks a child that enters the attempt's cgroups as its keeper does, then
// rank `rank`'s leaves as a rank the keeper starts does (writing itself
// into each cgroup.procs), and then runs `body`, whose value is its exit
// code. Returns once the child is in them.
template <typename Body>
pid_t StartInRank(AttemptCgroup& cgroup, int rank, const RankLimits& limits, Body body) {
  Result<std::vector<int>> fds = cgroup.PrepareRank(rank, limits);
  REQUIRE(fds.ok());
  int entered[2];
  REQUIRE(pipe(entered) == 0);
  pid_t child = fork();
  if (child == 0) {
    close(entered[0]);
    if (!cgroup.Add(getpid()).ok()) _exit(119);
    for (int fd : *fds) {
      if (write(fd, "0", 1) != 1) _exit(120);
    }
    close(entered[1]);
    _exit(body());
  }
  close(entered[1]);
  for (int fd : *fds) close(fd);
  REQUIRE(child > 0);
  char unused;
  REQUIRE(read(entered[0], &unused, 1) == 0);  // its end closed: it is in, or gone
  close(entered[0]);
  return child;
}

void RemoveEventually(const AttemptCgroup& cgroup) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!cgroup.Remove() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(cgroup.Remove());
}

}  // namespace

TEST_CASE("a rank's memory becomes memory.max (v2) or memory.limit_in_bytes (v1), with no swap beside it",
          "[limits]") {
  CHECK(Values(MemoryLimitWrites(4LL << 30, true)) == "memory.max=4294967296 memory.swap.max=0? ");
  CHECK(Values(MemoryLimitWrites(4LL << 30, false)) ==
        "memory.limit_in_bytes=4294967296 memory.memsw.limit_in_bytes=4294967296? ");
  CHECK(MemoryLimitWrites(0, true).empty());
}

TEST_CASE("a rank's CPUs become a weight in proportion, and with cpu_limit quota also at most that much time",
          "[limits]") {
  CHECK(Values(CpuLimitWrites(2, true, "weight")) == "cpu.weight=200 ");
  CHECK(Values(CpuLimitWrites(0.5, false, "weight")) == "cpu.shares=512 ");
  CHECK(Values(CpuLimitWrites(0.5, true, "quota")) == "cpu.weight=50 cpu.max=50000 100000 ");
  CHECK(Values(CpuLimitWrites(1.5, false, "quota")) ==
        "cpu.shares=1536 cpu.cfs_period_us=100000 cpu.cfs_quota_us=150000 ");
  CHECK(Values(CpuLimitWrites(1000, true, "weight")) == "cpu.weight=10000 ");  // v2's largest
  CHECK(Values(CpuLimitWrites(0.001, false, "quota")) == "cpu.shares=2 cpu.cfs_period_us=100000 cpu.cfs_quota_us=1000 ");
  CHECK(CpuLimitWrites(2, true, "none").empty());
  CHECK(CpuLimitWrites(0, true, "quota").empty());
  // An attempt weighs what its ranks on the node weigh together.
  CHECK(Values(AttemptWeightWrites({200, 200, 200}, true)) == "cpu.weight=600 ");
  CHECK(Values(AttemptWeightWrites({8192, 8192}, false)) == "cpu.shares=16384 ");
  CHECK(Values(AttemptWeightWrites({10000, 10000}, true)) == "cpu.weight=10000 ");
  CHECK(AttemptWeightWrites({}, true).empty());
  CHECK(Values(PidsLimitWrites(100)) == "pids.max=100 ");
  CHECK(PidsLimitWrites(0).empty());
}

TEST_CASE("a bad cpu_limit or attempt_pids_max is refused at the agent's start, naming the flag", "[limits]") {
  LimitSettings settings;
  settings.cpu_limit = "shares";
  auto refused = Containment::Detect("auto", "clusterd-unit-bad", settings);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "--cpu-limit: expected weight, quota or none, got 'shares'");
  settings.cpu_limit = "quota";
  settings.attempt_pids_max = -1;
  CHECK(CheckLimitSettings(settings).message() == "--attempt-pids-max: expected 0 (no limit) or more, got -1");
  auto subreaper = Containment::Detect("subreaper", "clusterd-unit-bad", settings);
  REQUIRE(subreaper.ok());
  CHECK(subreaper->limits.Describe() == "none");
}

TEST_CASE("a rank that allocates past its memory limit is killed by the kernel, and its cgroup says so", "[limits]") {
  Node node({"none", 0});
  if (!node.containment.limits.memory.present()) {
    WARN("skipped: this machine offers no memory controller here (" << node.containment.limits.why_not << ")");
    return;
  }
  AttemptCgroup attempt = node.Attempt("job-0001.attempt-0");
  REQUIRE(attempt.Create().ok());
  constexpr int64_t kLimit = 32 << 20;
  // Rank 0 touches 256 MiB, page by page; rank 1 stays within its limit.
  pid_t greedy = StartInRank(attempt, 0, {kLimit, 0}, [] {
    constexpr size_t kBytes = 256 << 20;
    // volatile: the stores must happen, though nothing reads them.
    volatile char* bytes = static_cast<volatile char*>(malloc(kBytes));
    for (size_t i = 0; bytes && i < kBytes; i += 4096) bytes[i] = 1;
    return bytes ? 0 : 1;
  });
  pid_t modest = StartInRank(attempt, 1, {kLimit, 0}, [] {
    std::vector<char> bytes(4 << 20, 1);
    return bytes[12345] == 1 ? 0 : 1;
  });
  int status = 0;
  REQUIRE(waitpid(greedy, &status, 0) == greedy);
  INFO("status " << status);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(attempt.OutOfMemory(0));
  REQUIRE(waitpid(modest, &status, 0) == modest);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(attempt.OutOfMemory(1));
  const std::string rank0 = node.containment.limits.memory.root + "/job-0001.attempt-0/rank-0";
  CHECK(ReadWholeFile(rank0 + (node.containment.limits.memory.v2 ? "/memory.max" : "/memory.limit_in_bytes"))
            .value_or("") == std::to_string(kLimit) + "\n");
  RemoveEventually(attempt);
}

TEST_CASE("a fork bomb in an attempt stops at the node's attempt_pids_max", "[limits]") {
  Node node({"none", 16});
  if (!node.containment.limits.pids.present()) {
    WARN("skipped: this machine offers no pids controller here (" << node.containment.limits.why_not << ")");
    return;
  }
  AttemptCgroup attempt = node.Attempt("job-0002.attempt-0");
  REQUIRE(attempt.Create().ok());
  int ends[2];
  REQUIRE(pipe(ends) == 0);
  // Forks children that sleep until fork fails, then tells how many it made.
  pid_t bomb = StartInRank(attempt, 0, {}, [&] {
    int made = 0;
    for (; made < 1000; ++made) {
      pid_t child = fork();
      if (child < 0) break;
      if (child == 0) {
        pause();
        _exit(0);
      }
    }
    (void)!write(ends[1], &made, sizeof made);
    pause();
    return 0;
  });
  close(ends[1]);
  int made = -1;
  REQUIRE(read(ends[0], &made, sizeof made) == sizeof made);
  close(ends[0]);
  CHECK(made == 15);  // 16 processes: the rank and 15 children
  CHECK(attempt.KillAll() == 16);
  REQUIRE(waitpid(bomb, nullptr, 0) == bomb);
  RemoveEventually(attempt);
}

TEST_CASE("a rank's CPU weight and quota are written into its own cgroup, and its attempt weighs all its ranks",
          "[limits]") {
  Node node({"quota", 0});
  if (!node.containment.limits.cpu.present()) {
    WARN("skipped: this machine offers no cpu controller here (" << node.containment.limits.why_not << ")");
    return;
  }
  AttemptCgroup attempt = node.Attempt("job-0003.attempt-0");
  REQUIRE(attempt.Create().ok());
  for (int rank : {2, 3}) {
    Result<std::vector<int>> fds = attempt.PrepareRank(rank, {0, 1.5});
    REQUIRE(fds.ok());
    for (int fd : *fds) close(fd);
  }
  const std::string folder = node.containment.limits.cpu.root + "/job-0003.attempt-0";
  const std::string leaf = folder + "/rank-2";
  if (node.containment.limits.cpu.v2) {
    CHECK(ReadWholeFile(leaf + "/cpu.weight").value_or("") == "150\n");
    CHECK(ReadWholeFile(leaf + "/cpu.max").value_or("") == "150000 100000\n");
    CHECK(ReadWholeFile(folder + "/cpu.weight").value_or("") == "300\n");  // both ranks' together
  } else {
    CHECK(ReadWholeFile(leaf + "/cpu.shares").value_or("") == "1536\n");
    CHECK(ReadWholeFile(leaf + "/cpu.cfs_quota_us").value_or("") == "150000\n");
    CHECK(ReadWholeFile(folder + "/cpu.shares").value_or("") == "3072\n");  // both ranks' together
  }
  RemoveEventually(attempt);
}

// A keeper's cgroup holds one attempt after another (launcher_process.h):
// the next attempt finds none of the last one's rank leaves, limits or
// out-of-memory counts, and none of its CPU weight.
TEST_CASE("a keeper's cgroup handed to the next attempt keeps no rank leaf and no CPU weight of the last one",
          "[limits]") {
  Node node({"quota", 0});
  if (!node.containment.limits.cpu.present()) {
    WARN("skipped: this machine offers no cpu controller here (" << node.containment.limits.why_not << ")");
    return;
  }
  AttemptCgroup keeper = node.Attempt("keeper-1");
  REQUIRE(keeper.Create().ok());
  Result<std::vector<int>> fds = keeper.PrepareRank(0, {0, 2});
  REQUIRE(fds.ok());
  for (int fd : *fds) close(fd);
  const std::string folder = node.containment.limits.cpu.root + "/keeper-1";
  const bool v2 = node.containment.limits.cpu.v2;
  const std::string weight_file = folder + (v2 ? "/cpu.weight" : "/cpu.shares");
  REQUIRE(access((folder + "/rank-0").c_str(), F_OK) == 0);  // a quota is a leaf's
  REQUIRE(ReadWholeFile(weight_file).value_or("") == (v2 ? "200\n" : "2048\n"));

  keeper.ClearForNextAttempt();
  CHECK(access((folder + "/rank-0").c_str(), F_OK) != 0);
  // The next attempt's rank asks for no CPUs: the folder weighs one CPU, the default.
  fds = keeper.PrepareRank(0, {0, 0});
  REQUIRE(fds.ok());
  for (int fd : *fds) close(fd);
  CHECK(ReadWholeFile(weight_file).value_or("") == (v2 ? "100\n" : "1024\n"));
  // One that asks for some sets its own.
  keeper.ClearForNextAttempt();
  fds = keeper.PrepareRank(1, {0, 0.5});
  REQUIRE(fds.ok());
  for (int fd : *fds) close(fd);
  CHECK(ReadWholeFile(weight_file).value_or("") == (v2 ? "50\n" : "512\n"));
  RemoveEventually(keeper);
}

TEST_CASE("with CPU weights alone, a v1 rank stays in its keeper's folder, which weighs all its ranks", "[limits]") {
  Node node({"weight", 0});
  if (!node.containment.limits.cpu.present()) {
    WARN("skipped: this machine offers no cpu controller here (" << node.containment.limits.why_not << ")");
    return;
  }
  AttemptCgroup attempt = node.Attempt("job-0004.attempt-0");
  REQUIRE(attempt.Create().ok());
  std::vector<int> opened;
  for (int rank : {0, 1}) {
    Result<std::vector<int>> fds = attempt.PrepareRank(rank, {0, 2});
    REQUIRE(fds.ok());
    opened.insert(opened.end(), fds->begin(), fds->end());
  }
  const std::string folder = node.containment.limits.cpu.root + "/job-0004.attempt-0";
  const bool v2 = node.containment.limits.cpu.v2;
  CHECK(ReadWholeFile(folder + (v2 ? "/cpu.weight" : "/cpu.shares")).value_or("") == (v2 ? "400\n" : "4096\n"));
  // A leaf per rank only where cgroup v2 asks for one; none in v1's memory
  // hierarchy either, as no rank has a memory limit.
  CHECK((access((folder + "/rank-0").c_str(), F_OK) == 0) == v2);
  if (node.containment.limits.memory.present() && !node.containment.limits.memory.v2) {
    CHECK(access((node.containment.limits.memory.root + "/job-0004.attempt-0").c_str(), F_OK) != 0);
  }
  // Without controllers of cgroup v2 a rank enters nothing itself: it
  // stays where its keeper is.
  const bool v2_leaves = node.containment.limits.memory.v2 || v2;
  CHECK(opened.size() == (v2_leaves ? 2u : 0u));
  for (int fd : opened) close(fd);
  RemoveEventually(attempt);
}

TEST_CASE("an agent's start kills what a gone agent's attempts left running and removes their cgroups",
          "[limits][containment]") {
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  REQUIRE(waitpid(gone, nullptr, 0) == gone);
  // The gone agent's node: its root, an attempt, and a rank sleeping in it.
  const std::string stale_name = "clusterd-" + std::to_string(gone);
  auto stale = Containment::Detect("auto", stale_name, {"weight", 64});
  REQUIRE(stale.ok());
  if (stale->kind == ContainmentKind::kSubreaper) {
    WARN("skipped: this machine makes no cgroups here (" << stale->why_not << ")");
    return;
  }
  AttemptCgroup attempt(stale->kind, stale->root, "job-0004.attempt-0", stale->limits);
  REQUIRE(attempt.Create().ok());
  pid_t leftover = StartInRank(attempt, 0, {64 << 20, 1}, [] {
    setsid();
    pause();
    return 0;
  });
  std::vector<std::string> folders = {stale->root};
  for (const LimitController* controller : {&stale->limits.memory, &stale->limits.pids, &stale->limits.cpu}) {
    if (controller->present()) folders.push_back(controller->root);
  }

  // This process stands for the next agent on the machine.
  Node next({"weight", 64});
  int status = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  pid_t reaped = 0;
  while ((reaped = waitpid(leftover, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(reaped == leftover);
  INFO("status " << status);
  CHECK(WIFSIGNALED(status));
  struct stat st {};
  for (const std::string& folder : folders) {
    INFO(folder);
    CHECK(stat(folder.c_str(), &st) != 0);
  }
}
