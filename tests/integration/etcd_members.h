// Real etcd members for the [etcd] tests: N members of one cluster on free
// loopback ports, each with its data in a private temp folder, started
// from Debian's etcd-server (/usr/bin/etcd). They never touch the
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

class EtcdMembers {
 public:
  static constexpr const char* kEtcdBinary = "/usr/bin/etcd";
  static constexpr const char* kEtcdctlBinary = "/usr/bin/etcdctl";

  // Whether /usr/bin/etcd and etcdctl are installed; else why not.
  static bool Installed(std::string* why);

  // Starts `count` members and waits until the cluster answers (error()
  // says why not).
  explicit EtcdMembers(int count, const EtcdMemberTls& tls = {});
  ~EtcdMembers();

  EtcdMembers(const EtcdMembers&) = delete;
  EtcdMembers& operator=(const EtcdMembers&) = delete;

  // "" once every member started and the cluster answered; else what went
  // wrong, with the members' log tails.
  const std::string& error() const { return error_; }
  // 127.0.0.1:PORT of each member's client port.
  std::vector<std::string> client_addresses() const;
  // etcd://127.0.0.1:P1,127.0.0.1:P2,...[prefix]
  std::string url(const std::string& prefix = "") const;
  const std::string& dir() const { return dir_; }

  // SIGKILLs member i and waits until it is gone.
  void Kill(int i);
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
    int client_port = 0;
    int peer_port = 0;
    pid_t pid = -1;
  };
  void Spawn(int i);
  std::string ClientUrl(const Member& m) const;

  std::string dir_;
  EtcdMemberTls tls_;
  std::vector<Member> members_;
  std::string initial_cluster_;
  std::string error_;
};

}  // namespace clusterd::testing
