// The config table (common/config_def.h): its reference page says what it
// holds, clusterctl reads its keys from the environment, and its deadline
// is rpc_timeout_ms unless a flag says otherwise.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "cli/command_line.h"
#include "common/config.h"

using namespace clusterd;

namespace {

const std::string kDocPath = std::string(CLUSTERD_SOURCE_DIR) + "/docs/CONFIG.md";
const std::string kBegin = "<!-- BEGIN config table: generated from common/config_def.h -->\n";
const std::string kEnd = "<!-- END config table -->\n";

std::string Dashes(std::string name) {
  for (char& c : name) c = c == '_' ? '-' : c;
  return name;
}

std::string Cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// What docs/CONFIG.md holds between its markers: one row per key, in the
// table's order, the daemon's keys first.
std::string ReferenceTables() {
  std::ostringstream daemon, clusterctl;
  daemon << "### clusterd start\n\n| key | flag | default | meaning |\n| --- | --- | --- | --- |\n";
  clusterctl << "### clusterctl\n\n| key | variable | default | meaning |\n| --- | --- | --- | --- |\n";
  for (const ConfigEntry& entry : ConfigEntries()) {
    if (entry.clusterctl) {
      clusterctl << "| `" << entry.name << "` | `" << ClusterctlEnvironmentName(entry.name) << "` | `"
                 << entry.default_value << "` | " << Cell(entry.description) << " |\n";
    } else {
      daemon << "| `" << entry.name << "` | `--" << Dashes(entry.name) << "` | `" << entry.default_value << "` | "
             << Cell(entry.description) << " |\n";
    }
  }
  return daemon.str() + "\n" + clusterctl.str();
}

std::string ReadSourceFile(const std::string& path) {
  std::ifstream in(std::string(CLUSTERD_SOURCE_DIR) + "/" + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ReadDoc() { return ReadSourceFile("docs/CONFIG.md"); }

// The number `pattern`'s one group matches in `text`, -1 when none does.
int NumberIn(const std::string& text, const std::string& pattern) {
  std::smatch match;
  if (!std::regex_search(text, match, std::regex(pattern))) return -1;
  return std::stoi(match[1].str());
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_.c_str());
    } else {
      setenv(name_.c_str(), old_.c_str(), 1);
    }
  }

 private:
  std::string name_, old_;
};

cli::CommandLine Parse(std::vector<std::string> args, int* code) {
  cli::CommandLine line;
  *code = cli::ParseCommandLine("status", "status", args, boost::program_options::options_description("extra"), 0, 0,
                                &line);
  return line;
}

}  // namespace

TEST_CASE("docs/CONFIG.md lists every key of the config table with its default and meaning", "[config]") {
  const std::string doc = ReadDoc();
  REQUIRE(!doc.empty());
  const size_t begin = doc.find(kBegin), end = doc.find(kEnd);
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  const std::string written = doc.substr(begin + kBegin.size(), end - begin - kBegin.size());
  const std::string expected = ReferenceTables();
  // Each key by name first, so that a missing line says which key it is.
  for (const ConfigEntry& entry : ConfigEntries()) {
    INFO("key " << entry.name << " has no row in docs/CONFIG.md (CLUSTERD_UPDATE_DOCS=1 unit_tests '[config]' "
                                 "rewrites its table)");
    CHECK(written.find("| `" + entry.name + "` |") != std::string::npos);
  }
  if (written != expected && std::getenv("CLUSTERD_UPDATE_DOCS") != nullptr) {
    std::ofstream(kDocPath) << doc.substr(0, begin + kBegin.size()) << expected << doc.substr(end);
    return;
  }
  INFO("docs/CONFIG.md's table differs from common/config_def.h (CLUSTERD_UPDATE_DOCS=1 unit_tests '[config]' "
       "rewrites it)");
  CHECK(written == expected);
}

TEST_CASE("every key of the config table has a description and a unique name", "[config]") {
  std::set<std::string> names;
  for (const ConfigEntry& entry : ConfigEntries()) {
    INFO(entry.name);
    CHECK(names.insert(entry.name).second);
    CHECK(!entry.description.empty());
  }
  // The ports live in the table: `clusterd start`'s flags come from it.
  CHECK(names.count("port") == 1);
  CHECK(names.count("dashboard_port") == 1);
  CHECK(names.count("agent_port") == 1);
}

// What cannot read the table (a shell file, Python) writes the port as a
// number: each must be the table's default.
TEST_CASE("the ports written outside the table are its defaults: the package's settings, the Python client's",
          "[config]") {
  const Config defaults;
  const std::string settings = ReadSourceFile("packaging/debian/default");
  REQUIRE(!settings.empty());
  CHECK(NumberIn(settings, "\\nCLUSTERD_PORT=([0-9]+)\\n") == defaults.port);
  CHECK(NumberIn(settings, "\\nCLUSTERD_DASHBOARD_PORT=([0-9]+)\\n") == defaults.dashboard_port);
  // Its comment names the agents' port: the one after --port (agent_port -1).
  REQUIRE(defaults.agent_port == -1);
  CHECK(NumberIn(settings, "next port \\(([0-9]+);") == defaults.port + 1);
  const std::string python = ReadSourceFile("python/clusterd/job_submission/_http.py");
  REQUIRE(!python.empty());
  CHECK(NumberIn(python, "DEFAULT_ADDRESS = \"http://127\\.0\\.0\\.1:([0-9]+)\"") == defaults.dashboard_port);
  // The quick start names no port: it takes clusterd's.
  const std::string quickstart = ReadSourceFile("scripts/quickstart.sh");
  REQUIRE(!quickstart.empty());
  CHECK(quickstart.find(std::to_string(defaults.port)) == std::string::npos);
}

TEST_CASE("clusterctl reads its keys from CLUSTER_<NAME>, and a bad value names the variable", "[config]") {
  CHECK(ClusterctlEnvironmentName("rpc_timeout_ms") == "CLUSTER_RPC_TIMEOUT_MS");
  {
    ScopedEnv unset("CLUSTER_RPC_TIMEOUT_MS", nullptr);
    Config config;
    REQUIRE(ReadClusterctlEnvironment(&config).ok());
    CHECK(config.rpc_timeout_ms == Config().rpc_timeout_ms);
  }
  {
    ScopedEnv set("CLUSTER_RPC_TIMEOUT_MS", "250");
    ScopedEnv outage("CLUSTER_FOLLOW_OUTAGE_MS", "0");
    Config config;
    REQUIRE(ReadClusterctlEnvironment(&config).ok());
    CHECK(config.rpc_timeout_ms == 250);
    CHECK(config.follow_outage_ms == 0);
  }
  for (const char* bad : {"12x", "fast", " "}) {
    ScopedEnv set("CLUSTER_RPC_TIMEOUT_MS", bad);
    Config config;
    Status read = ReadClusterctlEnvironment(&config);
    CHECK(read.code() == Status::Code::kInvalidArgument);
    CHECK(read.message() == std::string("CLUSTER_RPC_TIMEOUT_MS='") + bad + "' is not a whole number");
  }
  {
    ScopedEnv set("CLUSTER_RPC_TIMEOUT_MS", "99999999999");
    Config config;
    Status read = ReadClusterctlEnvironment(&config);
    CHECK(read.code() == Status::Code::kInvalidArgument);
    CHECK(read.message().find("CLUSTER_RPC_TIMEOUT_MS='99999999999' is out of range") == 0);
  }
  // The daemon's keys are flags, never variables.
  {
    ScopedEnv set("CLUSTER_HEARTBEAT_MS", "7");
    Config config;
    REQUIRE(ReadClusterctlEnvironment(&config).ok());
    CHECK(config.heartbeat_ms == Config().heartbeat_ms);
  }
}

TEST_CASE("clusterctl's call deadline is rpc_timeout_ms: the table's, then its variable, then --timeout-ms",
          "[config][cli]") {
  int code = 0;
  {
    ScopedEnv unset("CLUSTER_RPC_TIMEOUT_MS", nullptr);
    ScopedEnv unset_outage("CLUSTER_FOLLOW_OUTAGE_MS", nullptr);
    cli::CommandLine line = Parse({}, &code);
    REQUIRE(code == -1);
    CHECK(line.client.timeout_ms == Config().rpc_timeout_ms);
    CHECK(line.client.follow_outage_ms == Config().follow_outage_ms);
  }
  ScopedEnv set("CLUSTER_RPC_TIMEOUT_MS", "250");
  ScopedEnv outage("CLUSTER_FOLLOW_OUTAGE_MS", "1500");
  cli::CommandLine from_env = Parse({}, &code);
  REQUIRE(code == -1);
  CHECK(from_env.client.timeout_ms == 250);
  CHECK(from_env.client.follow_outage_ms == 1500);
  cli::CommandLine from_flag = Parse({"--timeout-ms", "900"}, &code);
  REQUIRE(code == -1);
  CHECK(from_flag.client.timeout_ms == 900);
  {
    ScopedEnv zero("CLUSTER_RPC_TIMEOUT_MS", "0");
    Parse({}, &code);
    CHECK(code == 2);
  }
  {
    ScopedEnv bad("CLUSTER_RPC_TIMEOUT_MS", "soon");
    Parse({}, &code);
    CHECK(code == 2);
  }
}
