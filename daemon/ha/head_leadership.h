// A head in HA (clusterd start --head --ha etcd://...): campaigns for
// leadership in etcd (LeaderElection) and turns it into serving. While it
// stands by, its port is a StandbyServer's, which sends every caller to
// the leader. When it wins, the standby server goes and `lead` loads the
// cluster's state and serves on the port: the one seam where a head's
// state is built, only once it leads. When it stops leading (its lease
// could not be kept alive, another head leads), `stop_leading` ends the
// serving at once (no launch, no acknowledgement after it) and the
// standby server comes back; the agents, cut off, look for the leader.
// It also registers itself under <prefix>/heads/<id> with a lease of its
// own, so that the heads, leading or not, can be listed.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "daemon/ha/dashboard_redirect.h"
#include "daemon/ha/etcd_client.h"
#include "daemon/ha/etcd_endpoints.h"
#include "daemon/ha/heads_service.h"
#include "daemon/ha/leader_election.h"
#include "daemon/ha/standby_server.h"

namespace clusterd {

// What a term as leader is given: where the cluster's state lives in etcd
// (etcd_state_stores.h) and the leader revision that fences its writes.
struct LeaderTerm {
  EtcdClient* etcd = nullptr;  // outlives the term
  std::string prefix;
  int64_t leader_revision = 0;
  // Called from any thread when a fenced write finds this head deposed:
  // it stops serving at once and campaigns again. A call after the term
  // ended does nothing.
  std::function<void()> deposed;
  // HaHeads, for the term's gRPC server to serve beside the head's own.
  grpc::Service* heads_service = nullptr;
};

struct HeadLeadershipOptions {
  EtcdEndpoints endpoints;
  EtcdTls tls;
  std::string id;       // unique among the heads
  std::string address;  // host:port clients and agents reach this head at
  int lease_ttl_ms = 2000;
  int step_down_margin_ms = 500;
  int call_timeout_ms = 1000;
  StandbyServer::Options standby;
  // The dashboard: where a standby redirects from (the port the leader's
  // dashboard listens on), and this head's own as others reach it
  // ("http://HOST:PORT"), registered for standbys to redirect to.
  std::string dashboard_host;
  int dashboard_port = 0;
  std::string dashboard_url;
  // On the leadership's thread when this head starts leading: loads the
  // state and serves on the port. An error is logged and the head resigns
  // and campaigns again.
  std::function<Status(const LeaderTerm& term)> lead;
  // On the leadership's thread when it stops leading, and at Stop while it
  // leads: stops serving (launching, acknowledging) and frees the port.
  std::function<void()> stop_leading;
};

// One head as registered under <prefix>/heads/<id>.
struct RegisteredHead {
  std::string id;
  std::string address;
  std::string dashboard_url;
  int64_t started_unix_ms = 0;
};

class HeadLeadership {
 public:
  // Connects to etcd, starts the standby server on the port and campaigns.
  // Bad options, TLS files that cannot be read, and a port that is taken
  // are errors.
  static Result<std::unique_ptr<HeadLeadership>> Start(HeadLeadershipOptions options);
  ~HeadLeadership();  // Stop()
  HeadLeadership(const HeadLeadership&) = delete;
  HeadLeadership& operator=(const HeadLeadership&) = delete;

  // Stops serving if it leads, resigns (so that a standby leads at once),
  // and takes its registration out of etcd.
  void Stop();

  LeadershipState State() const;
  // Who leads now, as last seen ("" when none is known).
  std::string LeaderAddress() const;
  // The same, with why no leader is known when none is, as a standby says it.
  StandbyServer::LeaderView LeaderView() const;
  // The leader's dashboard as it registered it ("" when none is known).
  std::string LeaderDashboard() const;
  // Whether this head serves as the leader now.
  bool serving() const;
  // The heads registered in etcd now.
  Result<std::vector<RegisteredHead>> Heads() const;
  const std::string& id() const { return options_.id; }

 private:
  explicit HeadLeadership(HeadLeadershipOptions options);
  Status Begin();
  void Run();
  // Keeps <prefix>/heads/<id> alive: granted anew when its lease is gone.
  void KeepRegistered();
  void BecomeLeader();
  void BecomeStandby();
  // The dashboard's port redirects to the leader's; a port that cannot be
  // had is a warning, as a single head's dashboard's is.
  void RedirectDashboard();
  void Resign();  // REQUIRES: on the run thread

  // A new election, campaigning. REQUIRES: on the run thread (or in Begin).
  Status Campaign();

  const HeadLeadershipOptions options_;
  std::unique_ptr<EtcdClient> client_;
  // Swapped for a new one only when `lead` failed; read by gRPC's threads.
  mutable std::mutex election_mutex_;
  std::unique_ptr<LeaderElection> election_;
  HeadsService heads_service_{this};
  std::unique_ptr<StandbyServer> standby_;  // the run thread's
  std::unique_ptr<DashboardRedirect> dashboard_redirect_;  // the run thread's

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool want_leading_ = false;  // what the election last said
  bool serving_ = false;       // whether `lead` is in effect
  bool stopping_ = false;
  int64_t term_ = 0;         // counts the terms as leader; the current one's while serving_
  bool deposed_ = false;     // the current term's writes were refused as a deposed leader's
  int64_t registration_lease_ = 0;
  int64_t started_unix_ms_ = 0;
  std::thread thread_;
};

}  // namespace clusterd
