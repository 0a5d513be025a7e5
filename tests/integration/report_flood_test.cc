// One rank's reports cannot starve another's, on a real
// agent: a rank that holds many connections to the report socket leaves
// another job's rank on the same node every report, and a rank reporting
// in a tight loop is held to report_rate_per_s with nothing lost.
#include <catch2/catch.hpp>

#include <chrono>
#include <regex>
#include <string>

#include "harness.h"
#include "job_json.h"
#include "jobs_harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// The rank's report, in Python (a YAML block's lines): report(VALUE)
// answers the agent's reply.
const char* kReportFunction = R"(
  import json, os, socket, struct, sys, time
  def report(value):
      s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(os.environ["CLUSTER_AGENT_SOCKET"])
      body = json.dumps({"values": {"step": value}}).encode()
      s.sendall(struct.pack(">I", len(body)) + body)
      n = struct.unpack(">I", s.recv(4))[0]; reply = s.recv(n).decode(); s.close()
      return reply)";

long Count(const std::string& text, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(key + "=([0-9]+)"))) return -1;
  return std::stol(m[1]);
}

}  // namespace

TEST_CASE("a rank holding many report connections leaves another job's rank every report", "[report_flood]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2"}).exit_code == 0);
  const std::string holding = cluster.temp_dir() + "/holding";
  const std::string done = cluster.temp_dir() + "/victim-done";
  // The hog opens 100 connections and sends nothing, again and again, until the victim is done.
  const std::string hog = Submit(cluster, WriteJobFile(cluster, "hog", std::string(R"(entrypoint: |
  /usr/bin/python3 -c '
  import os, socket, time
  held = []
  deadline = time.time() + 60
  while not os.path.exists(")") + done + R"(") and time.time() < deadline:
      for s in held: s.close()
      held = []
      for i in range(100):
          s = socket.socket(socket.AF_UNIX)
          try:
              s.connect(os.environ["CLUSTER_AGENT_SOCKET"]); held.append(s)
          except OSError:
              s.close()
      open(")" + holding + R"(", "w").write("yes")
      time.sleep(2)
  '
)"));
  REQUIRE(WaitFor([&] { return !Slurp(holding).empty(); }, 30s, 50ms));
  const std::string victim = Submit(cluster, WriteJobFile(cluster, "victim", std::string(R"(entrypoint: |
  /usr/bin/python3 -c '
  )") + kReportFunction + R"(
  ok = 0
  for i in range(30):
      try:
          ok += report(i) == "{\"ok\":true}"
      except OSError as e:
          print("LOST", e)
      time.sleep(0.05)
  print("VICTIM ok=%d" % ok, flush=True)
  open(")" + done + R"(", "w").write("yes")
  '
)"));
  JobInfo ended = WaitEnd(cluster, victim, 90s);
  const std::string logs = cluster.Ctl({"logs", victim}).out;
  INFO(logs);
  REQUIRE(ended.state() == SUCCEEDED);
  REQUIRE(Count(logs, "VICTIM ok") == 30);
  MetricsReply metrics = ParseJson<MetricsReply>(cluster.Ctl({"metrics", victim, "--json"}));
  REQUIRE(metrics.records_size() == 30);
  WaitEnd(cluster, hog, 60s);
}

TEST_CASE("a rank reporting in a tight loop is held to report_rate_per_s and loses no report", "[report_flood]") {
  Cluster cluster;
  // 50 a second, bursts of 20: 2 s of a tight loop make about 120.
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--report-rate-per-s", "50", "--report-burst", "20"}).exit_code == 0);
  const std::string flooder = Submit(cluster, WriteJobFile(cluster, "flooder", std::string(R"(entrypoint: |
  /usr/bin/python3 -c '
  )") + kReportFunction + R"(
  ok = sent = 0
  start = time.time()
  while time.time() - start < 2:
      ok += report(sent) == "{\"ok\":true}"
      sent += 1
  print("FLOOD sent=%d ok=%d" % (sent, ok), flush=True)
  '
)"));
  JobInfo ended = WaitEnd(cluster, flooder, 60s);
  const std::string logs = cluster.Ctl({"logs", flooder}).out;
  INFO(logs);
  REQUIRE(ended.state() == SUCCEEDED);
  const long sent = Count(logs, "sent"), ok = Count(logs, "ok");
  REQUIRE(ok == sent);           // held back, never refused
  REQUIRE(sent >= 60);           // the burst and a second's worth at least
  REQUIRE(sent <= 20 + 50 * 3);  // at most the burst and the rate over the loop (and a second of slack)
  MetricsReply metrics = ParseJson<MetricsReply>(cluster.Ctl({"metrics", flooder, "--json"}));
  REQUIRE(metrics.records_size() == sent);  // each one reached the head
  // The last value too.
  REQUIRE(metrics.records(metrics.records_size() - 1).values().at("step") == sent - 1);
}
