// What a node agent is told at start: where the head is, what this node
// offers (a resource left at -1 is probed), and where its files go. Its own
// header so that the parts built from it (node_registration.h) need not
// see the agent.
#pragma once

#include <functional>
#include <string>

#include "common/config.h"
#include "common/net/tls.h"
#include "common/resources.h"
#include "common/waitable_clock.h"
#include "daemon/agent/launcher.h"

namespace clusterd {

struct NodeAgentOptions {
  std::string head_address;
  std::string token;
  TlsConfig tls;             // how to dial the head (and its store)
  std::string node_name;     // empty: the host name
  std::string node_ip;       // the address other nodes reach this one at
  double num_cpus = -1;      // -1: probe
  double num_gpus = -1;      // -1: probe (nvidia-smi); a count gives indexes 0..n-1
  double memory_bytes = -1;  // -1: probe
  ResourceSet custom;
  bool is_head = false;
  // The head is one of several in HA (a head started with --ha; a worker
  // given a comma list of heads is so too): its first registration waits
  // up to config.ha_leader_wait_ms for one of them to lead.
  bool heads_in_ha = false;
  // Called once when that first registration starts waiting for a leader,
  // with what the last try got (on the link's thread).
  std::function<void(const std::string& why)> on_waiting_for_leader;
  Config config;
  std::string session_dir;   // rank logs go to <session>/logs/jobs, rank groups to <session>/ranks
  std::string socket_path;   // the Unix socket ranks report metrics to
  std::string python_path;   // the clusterd Python package's folder, first on the ranks' PYTHONPATH ("" none)
  std::string package_dir;   // this machine's cache of code packages (shared by its agents)
  std::string work_dir;      // this agent's attempts' working folders (launch_prep.h's WorkingFolder)
  std::string hash_dir;      // hash caches of the folders it uploads
  // Where ranks are started; null: real processes (LauncherClient). Tests
  // pass a fake. REQUIRES: outlives the agent.
  Launcher* launcher = nullptr;
  // What the agent reads time from and waits on; null: the machine's.
  // Tests pass a fake. REQUIRES: outlives the agent.
  const WaitableClock* clock = nullptr;
};

}  // namespace clusterd
