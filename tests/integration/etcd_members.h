// Real etcd members for the [etcd] tests: N members of one cluster on free
// loopback ports, each with its data in a private temp folder, started
// from Debian's etcd-server (/usr/bin/etcd). Or each member on a simulated
// machine of its own (EtcdMemberPlace: machines.h), on that machine's
// address and etcd's own ports, 2379 and 2380. They never touch the
// system's own etcd service (its port, its /var/lib/etcd). The destructor
// SIGKILLs every member and removes the folder, also when a test fails; a
// member also gets SIGKILL when the thread that started it ends (its
// parent-death signal), so a test run killed on its timeout leaves none
// behind. Start and restart members from the test's own thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace clusterd::testing {

// Server TLS for the members' client port: their certificate and key, and
// the CA whose client certificates they require (--client-cert-auth).
struct EtcdMemberTls {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
  // With TLS, WaitHealthy asks through etcdctl with this client certificate.
  std::string client_cert_file;
  std::string client_key_file;
};

// Where one member runs: its command is prepended with `wrap` (nsenter
// into a simulated machine, Machine::EnterArgv) and it listens on `host`.
struct EtcdMemberPlace {
  std::vector<std::string> wrap;
  std::string host;
};

class EtcdMembers {
 public:
  static constexpr const char* kEtcdBinary = "/usr/bin/etcd";
  static constexpr const char* kEtcdctlBinary = "/usr/bin/etcdctl";

  // Whether /usr/bin/etcd and etcdctl are installed; else why not.
  static bool Installed(std::string* why);

  // Starts `count` members and waits until the cluster answers (error()
  // says why not).
  explicit EtcdMembers(int count, const EtcdMemberTls& tls = {});
  // One member per place, each on 2379 (clients) and 2380 (peers) of its
  // host. The folder of their data and logs is made under `parent_dir`,
  // which every place must see at the same path (a simulated machine's
  // /tmp is its own: /var/tmp is shared). etcdctl's health checks run in
  // the place of the first member that runs.
  EtcdMembers(const std::vector<EtcdMemberPlace>& places, const std::string& parent_dir,
              const EtcdMemberTls& tls = {});
  ~EtcdMembers();

  EtcdMembers(const EtcdMembers&) = delete;
  EtcdMembers& operator=(const EtcdMembers&) = delete;

  // "" once every member started and the cluster answered; else what went
  // wrong, with the members' log tails.
  const std::string& error() const { return error_; }
  // HOST:PORT of each member's client port.
  std::vector<std::string> client_addresses() const;
  // etcd://HOST1:P1,HOST2:P2,...[prefix]
  std::string url(const std::string& prefix = "") const;
  const std::string& dir() const { return dir_; }

  // SIGKILLs member i and waits until it is gone. A member on a simulated
  // machine is killed here before its machine's KillAll, which would reap
  // it behind this class's back.
  void Kill(int i);
  bool Running(int i) const { return members_[i].pid > 0; }
  // Starts member i again on its ports and data.
  void Restart(int i);
  // SIGSTOPs member i: its connections stay open and nothing answers, as
  // with a member whose machine hangs. Thaw sends SIGCONT.
  void Freeze(int i);
  void Thaw(int i);
  // Whether every running member answers a health check (which needs a
  // quorum) within `limit`.
  bool WaitHealthy(std::chrono::milliseconds limit);
  // The members' logs' last lines, for a failure's message.
  std::string LogTails() const;

 private:
  struct Member {
    std::string name;
    EtcdMemberPlace place;
    int client_port = 0;
    int peer_port = 0;
    pid_t pid = -1;
  };
  void Init(const std::vector<EtcdMemberPlace>& places, const std::string& parent_dir);
  void Spawn(int i);
  std::string ClientUrl(const Member& m) const;

  std::string dir_;
  EtcdMemberTls tls_;
  std::vector<Member> members_;
  std::string initial_cluster_;
  std::string error_;
};

}  // namespace clusterd::testing
