// A rank cannot report as another job's rank: the agent
// ties a reporter to the rank it descends from (SO_PEERCRED's pid, then
// its parents), which no process can change; a process group can be
// joined by any process of the launcher's session (setpgid), so it counts
// for nothing. Shown on a real agent: a rank forks a child that moves into
// the victim rank's process group and reports; the victim's metrics stay
// as they were.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "harness.h"
#include "job_json.h"
#include "jobs_harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

TEST_CASE("a rank's child that joins another job's rank's process group cannot report as that rank",
          "[report_forging]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2"}).exit_code == 0);
  const std::string pgid_file = cluster.temp_dir() + "/victim.pgid";
  // The victim reports nothing; it tells the attacker its process group.
  const std::string victim_file = WriteJobFile(cluster, "victim", R"(entrypoint: |
  /usr/bin/python3 -c '
  import os, time
  open(")" + pgid_file + R"(.tmp", "w").write(str(os.getpgid(0)))
  os.rename(")" + pgid_file + R"(.tmp", ")" + pgid_file + R"(")
  time.sleep(120)
  '
)");
  const std::string victim = Submit(cluster, victim_file);
  REQUIRE(WaitFor([&] { return !Slurp(pgid_file).empty(); }, 30s, 50ms));
  // The attacker's child joins the victim's group (which succeeds: same
  // session, same user), says so, and reports as the report() clients do.
  const std::string attacker_file = WriteJobFile(cluster, "attacker", R"(entrypoint: |
  /usr/bin/python3 -c '
  import json, os, socket, struct, sys
  victim = int(open(")" + pgid_file + R"(").read())
  child = os.fork()
  if child == 0:
      os.setpgid(0, victim)
      print("JOINED", os.getpgid(0) == victim, flush=True)
      s = socket.socket(socket.AF_UNIX); s.connect(os.environ["CLUSTER_AGENT_SOCKET"])
      body = json.dumps({"values": {"forged": 1}}).encode()
      s.sendall(struct.pack(">I", len(body)) + body)
      n = struct.unpack(">I", s.recv(4))[0]; print("REPLY", s.recv(n).decode(), flush=True)
      os._exit(0)
  os.waitpid(child, 0)
  '
)");
  const std::string attacker = Submit(cluster, attacker_file);
  JobInfo ended = WaitEnd(cluster, attacker, 60s);
  const std::string logs = cluster.Ctl({"logs", attacker}).out;
  INFO(logs);
  REQUIRE(ended.state() == SUCCEEDED);
  REQUIRE(logs.find("JOINED True") != std::string::npos);  // the forgery was really tried
  REQUIRE(logs.find("REPLY {\"ok\":true}") != std::string::npos);

  // The report counted for the rank the child descends from: the attacker's own.
  MetricsReply victims = ParseJson<MetricsReply>(cluster.Ctl({"metrics", victim, "--json"}));
  REQUIRE(victims.records_size() == 0);
  MetricsReply attackers = ParseJson<MetricsReply>(cluster.Ctl({"metrics", attacker, "--json"}));
  REQUIRE(attackers.records_size() == 1);
  REQUIRE(attackers.records(0).values().at("forged") == 1);
  REQUIRE(cluster.Ctl({"stop", victim}).exit_code == 0);
}
