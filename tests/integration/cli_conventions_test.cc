// clusterctl as people's habits expect: global flags before the command,
// --json on every read command, colour only on a terminal and never with
// NO_COLOR, and a version from both binaries.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cctype>
#include <fstream>

#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// Every line of `out` is a JSON object (one object, or JSON lines).
bool JsonLines(const std::string& out) {
  if (out.empty()) return false;
  size_t start = 0;
  for (size_t nl; (nl = out.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = out.substr(start, nl - start);
    if (line.empty() || line.front() != '{' || line.back() != '}') return false;
  }
  return start == out.size();
}

std::string Token(Cluster& cluster) {
  std::string token;
  std::ifstream(cluster.temp_dir() + "/session_latest/token") >> token;
  return token;
}

// `command` run on a pseudo-terminal (util-linux's script), as a person
// at a terminal would; what it printed there.
RunResult OnTerminal(const std::string& command, const std::map<std::string, std::string>& env = {}) {
  return Run({"/usr/bin/script", "-qec", command, "/dev/null"}, env);
}

}  // namespace

TEST_CASE("clusterctl takes its global flags before or after the command", "[cli]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  std::string token = Token(cluster);
  // An empty temp dir: the address and token can only come from the flags.
  std::string empty = cluster.temp_dir() + "/elsewhere";
  RunResult before = Run({CLUSTERCTL_BIN, "--address", cluster.address(), "--token=" + token, "--temp-dir", empty,
                          "--json", "status"});
  INFO(before.err);
  REQUIRE(before.exit_code == 0);
  REQUIRE(ParseJson<ClusterStatus>(before).nodes_size() == 1);
  RunResult after = Run({CLUSTERCTL_BIN, "status", "--address", cluster.address(), "--token", token, "--temp-dir",
                         empty, "--json"});
  REQUIRE(ParseJson<ClusterStatus>(after).nodes_size() == 1);

  RunResult unknown = Run({CLUSTERCTL_BIN, "--frobnicate", "status"});
  REQUIRE(unknown.exit_code == 2);
  REQUIRE(unknown.err.find("unknown flag '--frobnicate' before the command") != std::string::npos);
  // A timeout that is not above 0 is refused at once, rather than a call
  // that "did not answer within -5 ms".
  for (const char* nonsense : {"0", "-5"}) {
    RunResult refused = Run({CLUSTERCTL_BIN, "--timeout-ms", nonsense, "status"});
    CHECK(refused.exit_code == 2);
    CHECK(refused.err == std::string("clusterctl status: --timeout-ms must be above 0, got ") + nonsense +
                             " (see clusterctl status --help)\n");
  }
}

TEST_CASE("every read command of clusterctl prints JSON with --json", "[cli]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  std::string job = cluster.temp_dir() + "/hello.yaml";
  std::ofstream(job) << "name: hello\nworking_dir: " << cluster.temp_dir()
                     << "\nworking_dir_mode: shared\nentrypoint: echo hello\n";
  RunResult submitted = cluster.Ctl({"submit", job, "--follow", "--json"}, 60s);
  REQUIRE(submitted.exit_code == 0);
  std::string id = SubmittedJobId(submitted);
  for (const std::vector<std::string>& read : std::vector<std::vector<std::string>>{
           {"status"}, {"nodes"}, {"jobs"}, {"job", id}, {"logs", id}, {"metrics", id}, {"validate", job},
           {"version"}}) {
    std::vector<std::string> args = read;
    args.push_back("--json");
    RunResult r = cluster.Ctl(args);
    INFO("clusterctl " << read[0] << " --json: exit " << r.exit_code << ": " << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE(JsonLines(r.out));
  }
  std::string logs = cluster.Ctl({"logs", id, "--json"}).out;
  INFO(logs);
  REQUIRE(logs.find("{\"rank\":0,") == 0);
  REQUIRE(logs.find("hello") != std::string::npos);
}

TEST_CASE("clusterctl colours states on a terminal only, and never with NO_COLOR", "[cli]") {
  if (access("/usr/bin/script", X_OK) != 0) FAIL("util-linux's script is needed for a pseudo-terminal");
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  std::string command = std::string(CLUSTERCTL_BIN) + " nodes --temp-dir " + cluster.temp_dir();
  RunResult terminal = OnTerminal("env -u NO_COLOR " + command);
  INFO(terminal.out << terminal.err);
  REQUIRE(terminal.exit_code == 0);
  REQUIRE(terminal.out.find("\x1b[32mALIVE\x1b[0m") != std::string::npos);

  RunResult no_color = OnTerminal(command, {{"NO_COLOR", "1"}});
  REQUIRE(no_color.exit_code == 0);
  REQUIRE(no_color.out.find("ALIVE") != std::string::npos);
  REQUIRE(no_color.out.find('\x1b') == std::string::npos);

  RunResult piped = cluster.Ctl({"nodes"});
  REQUIRE(piped.out.find("ALIVE") != std::string::npos);
  REQUIRE(piped.out.find('\x1b') == std::string::npos);
}

TEST_CASE("clusterd --version and clusterctl version print the same version", "[cli]") {
  RunResult daemon = Run({CLUSTERD_BIN, "--version"});
  RunResult ctl = Run({CLUSTERCTL_BIN, "version"});
  REQUIRE(daemon.exit_code == 0);
  REQUIRE(ctl.exit_code == 0);
  REQUIRE(daemon.out.rfind("clusterd ", 0) == 0);
  std::string version = daemon.out.substr(9);
  REQUIRE(ctl.out == "clusterctl " + version);
  REQUIRE(Run({CLUSTERCTL_BIN, "--version"}).out == ctl.out);
  REQUIRE(std::isdigit(static_cast<unsigned char>(version[0])));
}

TEST_CASE("clusterctl refuses a sweep whose best_params names a folder before anything runs", "[cli][sweep]") {
  char dir_template[] = "/tmp/clusterd-it-bestparams-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string file = dir + "/sweep.yaml";
  std::ofstream(file) << "entrypoint: ./train --lr {lr}\nworking_dir: " << dir << "\n"
                         "tune: {metric: loss, search_space: {lr: {grid: [1, 2]}}, best_params: out}\n";
  REQUIRE(Run({"/bin/mkdir", dir + "/out"}).exit_code == 0);
  RunResult refused = Run({CLUSTERCTL_BIN, "validate", file});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err == "clusterctl: " + file + ": key 'tune.best_params': " + dir +
                           "/out is a folder: name a file, e.g. out/best_params.yaml\n");
  CHECK(Run({CLUSTERCTL_BIN, "validate", file, "--set", "tune.best_params=out/best.yaml"}).exit_code == 0);
  // Nor where trials.csv goes beside it, nor below a file.
  CHECK(Run({CLUSTERCTL_BIN, "validate", file, "--set", "tune.best_params=trials.csv"}).err ==
        "clusterctl: " + file + ": key 'tune.best_params': trials.csv is written beside it: name another file\n");
  CHECK(Run({CLUSTERCTL_BIN, "validate", file, "--set", "tune.best_params=sweep.yaml/best.yaml"}).err ==
        "clusterctl: " + file + ": key 'tune.best_params': " + file + " is not a folder\n");
  REQUIRE(Run({"/bin/rm", "-rf", dir}).exit_code == 0);
}
