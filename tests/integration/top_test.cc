// `clusterctl top` against a real head with a running job: drawn in place
// in a terminal (tmux, read back with capture-pane), redrawn as the job
// reports, quit with `q` or Ctrl-C with the terminal given back; plain
// lines without escape codes when stdout is a pipe.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <sstream>

#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kTmux = "/usr/bin/tmux";
constexpr int kWidth = 120;
constexpr int kHeight = 40;

// A tmux server of the test's own (its own socket), killed at the end.
class Tmux {
 public:
  explicit Tmux(const std::string& dir) : socket_(dir + "/tmux.sock") {}
  ~Tmux() { Run({kTmux, "-S", socket_, "kill-server"}); }

  // A detached session of kWidth x kHeight running `shell_command`.
  void Start(const std::string& session, const std::string& shell_command) {
    RunResult started = Run({kTmux, "-S", socket_, "new-session", "-d", "-s", session, "-x", std::to_string(kWidth), "-y",
                             std::to_string(kHeight), shell_command});
    INFO(started.err);
    REQUIRE(started.exit_code == 0);
  }
  // The pane's text, wrapped lines joined (-J): a line wider than the pane
  // here is one the terminal had to wrap.
  std::string Capture(const std::string& session) {
    return Run({kTmux, "-S", socket_, "capture-pane", "-p", "-J", "-t", session}).out;
  }
  void Resize(const std::string& session, int width, int height) {
    REQUIRE(Run({kTmux, "-S", socket_, "resize-window", "-t", session, "-x", std::to_string(width), "-y",
                 std::to_string(height)})
                .exit_code == 0);
  }
  void Keys(const std::string& session, const std::string& keys) {
    REQUIRE(Run({kTmux, "-S", socket_, "send-keys", "-t", session, keys}).exit_code == 0);
  }

 private:
  std::string socket_;
};

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The job's row's "#INDEX step=N": what changes when top redraws.
std::string MetricOf(const std::string& screen, const std::string& job_id) {
  std::smatch found;
  const std::regex row(job_id + R"(\s.*(#\d+ step=\d+))");
  return std::regex_search(screen, found, row) ? found[1].str() : "";
}

// The shell line tmux runs: top, then whether the terminal was given
// back in canonical mode with echo, then its exit code, then a wait so
// the pane stays to be read. The shell traps SIGINT, so that Ctrl-C ends
// top but not the shell (top gets the default disposition back).
std::string TopThenReport(Cluster& cluster) {
  return "trap : INT; " + std::string(CLUSTERCTL_BIN) + " top --interval 0.3 --temp-dir " + cluster.temp_dir() +
         "; code=$?; modes=$(stty -a | tr ' ;' '\\n\\n'); "
         "echo \"$modes\" | grep -qx icanon && echo \"$modes\" | grep -qx echo && echo terminal-restored; "
         "echo top-exited-$code; sleep 60";
}

}  // namespace

TEST_CASE("clusterctl top draws nodes and a running job's latest metric in place, redraws, and quits on q or Ctrl-C",
          "[cli][top][tmux]") {
  REQUIRE(access(kTmux, X_OK) == 0);  // package tmux (scripts/lib.sh installs it)
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);

  // Rank 0 reports {"step": N} about every 0.2 s, as ctrain::report() does.
  std::ofstream(cluster.temp_dir() + "/steps.py") <<
      "import json, os, socket, struct, time\n"
      "for step in range(1000):\n"
      "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
      "    s.connect(os.environ['CLUSTER_AGENT_SOCKET'])\n"
      "    body = json.dumps({'values': {'step': step}}).encode()\n"
      "    s.sendall(struct.pack('>I', len(body)) + body)\n"
      "    s.recv(4096)\n"
      "    s.close()\n"
      "    time.sleep(0.2)\n";
  const std::string job_file = cluster.temp_dir() + "/steps.yaml";
  std::ofstream(job_file) << "name: stepper\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                          << "entrypoint: ['/usr/bin/python3', 'steps.py']\n";
  const std::string id = SubmittedJobId(cluster.Ctl({"submit", job_file, "--json"}));
  REQUIRE(WaitFor([&] { return !ParseJson<MetricsReply>(cluster.Ctl({"metrics", id, "--json"})).records().empty(); },
                  60s, 200ms));
  const ClusterStatus status = cluster.Status();
  REQUIRE(status.nodes_size() == 2);

  Tmux tmux(cluster.temp_dir());
  tmux.Start("top", TopThenReport(cluster));
  std::string first;
  const bool drawn = WaitFor([&] {
    first = tmux.Capture("top");
    return !MetricOf(first, id).empty();
  }, 30s, 100ms);
  INFO(first);
  REQUIRE(drawn);
  // One frame, drawn from the top: the title once, each node's row with
  // its bars, the job's row with its newest record; nothing wrapped.
  CHECK(first.rfind("clusterd top - ", 0) == 0);
  CHECK(Count(first, "clusterd top - ") == 1);
  CHECK(first.find("2 nodes (2 alive, 0 draining, 0 dead) - 1 job running") != std::string::npos);
  for (const auto& node : status.nodes()) {
    const std::regex row("\n" + node.name() + R"(( \*)?\s+ALIVE\s+\[[| ]{10}\] [0-9.]+/[0-9]+\s+\[[| ]{10}\] )");
    CHECK(std::regex_search(first, row));
  }
  CHECK(std::regex_search(first, std::regex(id + R"(\s+stepper\s+RUNNING\s+1\s+1\s+\S+\s+#\d+ step=\d+)")));
  std::istringstream lines(first);
  for (std::string line; std::getline(lines, line);) CHECK(line.size() <= static_cast<size_t>(kWidth));

  // Redrawn in place: the job's record moves on, the frame stays one.
  std::string later;
  const bool redrawn = WaitFor([&] {
    later = tmux.Capture("top");
    return !MetricOf(later, id).empty() && MetricOf(later, id) != MetricOf(first, id);
  }, 10s, 100ms);
  INFO(later);
  REQUIRE(redrawn);
  CHECK(Count(later, "clusterd top - ") == 1);

  // A smaller window: the next frame is cut to it at once, not wrapped.
  tmux.Resize("top", 60, 12);
  std::string narrow;
  const bool fitted = WaitFor([&] {
    narrow = tmux.Capture("top");
    return narrow.rfind("clusterd top - ", 0) == 0 && narrow.find('\n') == 60;
  }, 10s, 100ms);
  INFO(narrow);
  REQUIRE(fitted);
  std::istringstream narrow_lines(narrow);
  for (std::string line; std::getline(narrow_lines, line);) CHECK(line.size() <= 60);
  CHECK(std::regex_search(narrow, std::regex(id + R"(\s+stepper\s+RUNNING)")));

  // q quits, and the shell finds its terminal as it was (echo, lines).
  tmux.Keys("top", "q");
  std::string after;
  const bool quit = WaitFor([&] {
    after = tmux.Capture("top");
    return after.find("top-exited-") != std::string::npos;
  }, 10s, 100ms);
  INFO(after);
  REQUIRE(quit);
  CHECK(after.find("top-exited-0") != std::string::npos);
  CHECK(after.find("terminal-restored") != std::string::npos);
  CHECK(after.find("clusterd top - ") == std::string::npos);  // the alternate screen is gone with it

  // Ctrl-C too: it ends by SIGINT (exit 130), the terminal given back first.
  tmux.Start("interrupted", TopThenReport(cluster));
  REQUIRE(WaitFor([&] { return !MetricOf(tmux.Capture("interrupted"), id).empty(); }, 30s, 100ms));
  tmux.Keys("interrupted", "C-c");
  const bool interrupted = WaitFor([&] {
    after = tmux.Capture("interrupted");
    return after.find("top-exited-") != std::string::npos;
  }, 10s, 100ms);
  INFO(after);
  REQUIRE(interrupted);
  CHECK(after.find("top-exited-130") != std::string::npos);
  CHECK(after.find("terminal-restored") != std::string::npos);

  // Into a pipe: plain lines, no escape codes; --once prints one block.
  RunResult once = cluster.Ctl({"top", "--once"});
  INFO(once.err);
  REQUIRE(once.exit_code == 0);
  CHECK(once.out.find('\x1b') == std::string::npos);
  CHECK(Count(once.out, "clusterd top - ") == 1);
  CHECK(std::regex_search(once.out, std::regex(id + R"(\s+stepper\s+RUNNING\s.*#\d+ step=\d+)")));
  for (const auto& node : status.nodes()) CHECK(once.out.find("\n" + node.name()) != std::string::npos);
  // Without --once, a block per refresh until it is stopped.
  RunResult blocks = cluster.Ctl({"top", "--interval", "0.2"}, 1500ms);
  CHECK(blocks.out.find('\x1b') == std::string::npos);
  CHECK(Count(blocks.out, "clusterd top - ") >= 2);

  // Bad input: a clear refusal.
  RunResult bad = cluster.Ctl({"top", "--interval", "0"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("--interval must be between 0.1 and 3600 seconds, not 0") != std::string::npos);

  cluster.Ctl({"stop", id});
}
