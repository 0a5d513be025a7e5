// Simulated machines for multi-node tests (DESIGN.md rule 11): each Machine
// has its own network namespace (eth0 on a private bridge), its own mount
// namespace (a private tmpfs on /tmp, which also holds its /var/lib/clusterd)
// and its own host name, so machines share nothing but the network and the
// installed system. /etc/hosts names
// every machine, but a machine's own name is 127.0.1.1 there, as on stock
// Debian; there is no DNS server. Needs root; tests
// skip with REQUIRE_SIM_NETWORK() where it cannot work. The destructor of
// SimNetwork always removes every namespace and process it made.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "test_skip.h"  // REQUIRE_SIM_NETWORK skips through it

namespace clusterd::testing {

class SimNetwork;

class Machine {
 public:
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;
  ~Machine();  // KillAll, then the holder and the namespace go

  const std::string& name() const { return name_; }  // also its host name
  const std::string& ip() const { return ip_; }      // on eth0, /24, default route via eth0
  const std::string& netns() const { return netns_; }
  pid_t holder() const { return holder_; }  // the process that holds the mount and UTS namespaces

  // Runs argv on the machine (nsenter into the holder's mount, network and
  // UTS namespaces) in a clean environment: PATH starts with the build's
  // daemon/ and cli/ folders, HOME=/tmp/home (also the working directory),
  // nothing of the test's environment leaks in; `env` is added on top.
  // argv[0] is looked up on that PATH.
  RunResult Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // sh -c script on the machine.
  RunResult Shell(const std::string& script, const std::map<std::string, std::string>& env = {},
                  std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // What runs a command on the machine with the test's own environment
  // (nsenter into its namespaces), for code that starts processes itself,
  // such as EtcdMembers and CephFixture: prepend it to the command.
  std::vector<std::string> EnterArgv() const;
  // Starts argv on the machine in the background, stdout and stderr into
  // files at the given paths of the test (not of the machine). The caller
  // waits for it or kills it; KillAll and the destructor are the safety net.
  pid_t Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              const std::string& stdout_path, const std::string& stderr_path);

  // Pulls the machine's cable (its bridge port goes down) and plugs it back.
  // As on a real machine, ARP entries that failed while it was out can make
  // its first connections after RestoreLink fail ("No route to host") for
  // about half a second.
  void CutLink();
  void RestoreLink();
  // A whole-machine crash and reboot: SIGKILL of every process of the
  // machine but the holder, reaped here (Spawned ones included), then its
  // leftover sockets (ss -K) and ARP cache go, as in a fresh kernel. Its
  // files stay; it can be used again at once. Dying processes still close
  // their TCP connections, so peers notice at once; for a power loss, where
  // nothing reaches them, CutLink first and RestoreLink afterwards.
  void KillAll();
  // Every process of the machine (its network namespace) but the holder.
  std::vector<pid_t> Pids() const;

  // The test's path to a file of the machine: /proc/<holder>/root + path.
  // Relative symlinks resolve on the machine; absolute ones do not (they
  // resolve against the test's root).
  std::string HostPath(const std::string& path) const;

 private:
  friend class SimNetwork;
  Machine(const std::string& name, const std::string& netns, const std::string& ip, const std::string& bridge_netns,
          const std::string& port);
  void Start();  // creates the namespaces and the holder; throws on failure
  std::vector<std::string> Wrap(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& env) const;

  std::string name_, netns_, ip_, bridge_netns_, port_;
  pid_t holder_ = 0;
};

class SimNetwork {
 public:
  // Whether machines can be made here (root, ip/unshare/nsenter, a network
  // namespace); if not, *why_not says why. Probed once per process.
  static bool Available(std::string* why_not);

  SimNetwork();   // also removes namespaces left by test processes that died
  ~SimNetwork();  // every machine's processes, holders and namespaces, then the bridge
  SimNetwork(const SimNetwork&) = delete;
  SimNetwork& operator=(const SimNetwork&) = delete;

  // A new machine on the bridge, 10.213.0.<10+n> for the n-th. name: [a-z0-9-], at most 32.
  Machine& AddMachine(const std::string& name);
  // Every namespace of this network is named prefix() + something.
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_, bridge_netns_;
  std::vector<std::unique_ptr<Machine>> machines_;
};

}  // namespace clusterd::testing

// First line of a test that needs SimNetwork: skips it, with the reason,
// where machines cannot be simulated (not root, no namespaces).
#define REQUIRE_SIM_NETWORK()                                                \
  do {                                                                       \
    std::string sim_network_why_not;                                         \
    if (!::clusterd::testing::SimNetwork::Available(&sim_network_why_not)) { \
      ::clusterd::testing::SkipTest(sim_network_why_not);                    \
      return;                                                                \
    }                                                                        \
  } while (false)
