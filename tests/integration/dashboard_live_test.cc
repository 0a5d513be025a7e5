// The job page's log tail is live: a page opened while a rank runs shows
// the lines it printed so far, then, without being reloaded, the lines it
// prints later, each once, and the job's end. Real Chromium, driven over
// its DevTools protocol (devtools_page.h).
#include <catch2/catch.hpp>
#include <fstream>

#include "devtools_page.h"
#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("a job page opened while its rank runs shows later log lines without a reload", "[dashboard][browser][live]") {
  Cluster cluster;
  int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port)}).exit_code == 0);
  const std::string dir = cluster.temp_dir();
  // The rank prints a line, waits for the test's go, prints another, waits
  // for the end. ($L keeps the lines out of the entrypoint the page shows.)
  std::ofstream(dir + "/live.yaml") << "name: live\nworking_dir: " << dir << "\nworking_dir_mode: shared\n"
                                   << "entrypoint: |\n"
                                   << "  L=line\n"
                                   << "  echo \"first $L of the rank\"\n"
                                   << "  while [ ! -e go ]; do sleep 0.1; done\n"
                                   << "  echo \"second $L of the rank\"\n"
                                   << "  while [ ! -e end ]; do sleep 0.1; done\n";
  const std::string id = SubmittedJobId(cluster.Ctl({"submit", dir + "/live.yaml", "--json"}));
  REQUIRE(WaitFor([&] { return ParseJson<JobInfo>(cluster.Ctl({"job", id, "--json"})).state() == RUNNING; }, 30s));

  RunResult token = Run({"/bin/cat", dir + "/session_latest/token"});
  DevToolsPage page(dir + "/chromium");
  page.Navigate("http://127.0.0.1:" + std::to_string(port) + "/job?id=" + id + "&token=" +
                token.out.substr(0, token.out.find('\n')));
  std::string text;
  auto shown = [&](const std::string& what) {
    return WaitFor([&] {
      text = page.EvaluateString("document.body.innerText");
      return text.find(what) != std::string::npos;
    }, 20s, 200ms);
  };
  REQUIRE(shown("first line of the rank"));
  INFO(text);
  REQUIRE(text.find("second line of the rank") == std::string::npos);
  REQUIRE(text.find("RUNNING") != std::string::npos);

  std::ofstream(dir + "/go").close();
  REQUIRE(shown("second line of the rank"));  // the page refreshes itself every 2 s
  REQUIRE(Count(text, "first line of the rank") == 1);
  REQUIRE(Count(text, "second line of the rank") == 1);

  std::ofstream(dir + "/end").close();
  REQUIRE(shown("SUCCEEDED"));
  REQUIRE(Count(text, "first line of the rank") == 1);
  REQUIRE(Count(text, "second line of the rank") == 1);
}
