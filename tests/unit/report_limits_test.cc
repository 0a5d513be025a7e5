// The report socket's limits: each rank's reports pass
// a token bucket (held back over the rate, refused only past max_hold),
// and each rank has connection slots of its own, so one rank holding many
// connections stops no other rank's report.
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <vector>

#include "common/clock.h"
#include "daemon/agent/report_rate.h"
#include "common/threads.h"
#include "daemon/agent/report_server.h"
#include "eventually.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

int Connect(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One report, as ctrain's send_report does it; the agent's answer, or "" when none came.
std::string Report(const std::string& path) {
  int fd = Connect(path);
  if (fd < 0) return "";
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  if (WriteFrame(fd, R"({"values":{"loss":1}})").ok()) ReadFrame(fd, &reply, 4096);
  close(fd);
  return reply;
}

// What a connection that sent nothing is answered at once, if anything.
std::string AnsweredAtOnce(int fd) {
  timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  if (!ReadFrame(fd, &reply, 4096, 1000).ok()) return "";
  return reply;
}

}  // namespace

TEST_CASE("a rank's reports past report_rate_per_s are held back, and refused only past max_hold", "[report_rate]") {
  FakeClock clock;
  ReportRate rate(&clock, 10, 3, 1'000'000);  // 10 a second, bursts of 3, held 1 s at most
  for (int i = 0; i < 3; ++i) REQUIRE(*rate.Take("job-1/0/0") == 0);
  // Past the burst each report waits its turn: 100 ms more for each.
  for (int i = 1; i <= 10; ++i) REQUIRE(*rate.Take("job-1/0/0") == i * 100'000);
  Result<Micros> refused = rate.Take("job-1/0/0");  // it would wait 1.1 s
  REQUIRE(refused.status().code() == Status::Code::kResourceExhausted);
  REQUIRE(refused.status().message().find("report_rate_per_s") != std::string::npos);
  // Another rank has a bucket of its own.
  REQUIRE(*rate.Take("job-2/0/0") == 0);
  // Refused took no token: a second later the rank has paid back ten.
  clock.AdvanceMillis(1000);
  REQUIRE(*rate.Take("job-1/0/0") == 100'000);
  // After a pause the burst is back, and full buckets are forgotten.
  clock.AdvanceMillis(10'000);
  for (int i = 0; i < 3; ++i) REQUIRE(*rate.Take("job-1/0/0") == 0);
  REQUIRE(rate.ranks_tracked() == 1);
  REQUIRE(*ReportRate(&clock, 0, 1, 0).Take("job-1/0/0") == 0);  // 0: no limit
}

TEST_CASE("a report over the rate is answered once its turn comes, not dropped", "[report_rate]") {
  TempTree dir;
  std::atomic<int> taken{0};
  ReportLimits limits;
  limits.rate_per_s = 5;
  limits.burst = 1;
  ReportServer server(
      dir.Path("agent.sock"), [&](const MetricsReport&, pid_t) { ++taken; return Status::Ok(); },
      [](pid_t) { return Result<std::string>(std::string("job-1/0/0")); }, limits);
  REQUIRE(server.Start().ok());
  REQUIRE(Report(server.path()) == R"({"ok":true})");
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(Report(server.path()) == R"({"ok":true})");
  const auto waited = std::chrono::steady_clock::now() - start;
  REQUIRE(waited >= std::chrono::milliseconds(150));  // its turn: 200 ms after the first
  REQUIRE(waited < std::chrono::seconds(3));
  REQUIRE(taken == 2);
}

TEST_CASE("one rank holding many report connections does not stop another rank's report", "[report_slots]") {
  TempTree dir;
  const pid_t hog = getpid();
  ReportLimits limits;
  limits.slots_per_rank = 4;
  ReportServer server(
      dir.Path("agent.sock"), [](const MetricsReport&, pid_t) { return Status::Ok(); },
      [hog](pid_t peer) { return Result<std::string>(std::string(peer == hog ? "hog/0/0" : "victim/0/0")); },
      limits);
  REQUIRE(server.Start().ok());
  // The hog opens more connections than the whole socket had slots, and sends nothing.
  std::vector<int> held;
  for (int i = 0; i < ReportServer::kMaxClients + 8; ++i) {
    int fd = Connect(server.path());
    if (fd >= 0) held.push_back(fd);
  }
  // Past its 4 the hog is told why, at once.
  std::string told;
  for (size_t i = 4; i < held.size() && told.empty(); ++i) told = AnsweredAtOnce(held[i]);
  INFO(told);
  REQUIRE(told.find("report_slots_per_rank") != std::string::npos);
  // Another rank (another process) reports meanwhile, and is answered.
  const auto start = std::chrono::steady_clock::now();
  pid_t child = fork();
  if (child == 0) _exit(Report(server.path()) == R"({"ok":true})" ? 0 : 1);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));  // not after the hog's 5 s
  for (int fd : held) close(fd);
}

TEST_CASE("the report server's threads are counted by name: one for accepting, one a connection served",
          "[report_slots][threads]") {
  TempTree dir;
  auto running = [](const char* name) {
    auto threads = RunningNamedThreads();
    auto it = threads.find(name);
    return it == threads.end() ? 0 : it->second;
  };
  const int conns_before = running("report-conn");
  const int servers_before = running("report-server");
  {
    ReportServer server(
        dir.Path("agent.sock"), [](const MetricsReport&, pid_t) { return Status::Ok(); },
        [](pid_t) { return Result<std::string>(std::string("job/0/0")); }, ReportLimits{});
    REQUIRE(server.Start().ok());
    REQUIRE(Eventually([&] { return running("report-server") == servers_before + 1; }));
    // Two connections that send nothing yet: each is served on a thread of its own.
    int first = Connect(server.path());
    int second = Connect(server.path());
    REQUIRE(first >= 0);
    REQUIRE(second >= 0);
    REQUIRE(Eventually([&] { return running("report-conn") == conns_before + 2; }));
    close(first);
    close(second);
    REQUIRE(Eventually([&] { return running("report-conn") == conns_before; }));
    server.Stop();
  }
  REQUIRE(running("report-server") == servers_before);
}
