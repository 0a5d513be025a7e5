// One head's part in electing the leader of HA heads, through etcd. A
// candidate campaigns with a lease of its own: it creates the leader key
// `<prefix>/leader` only if absent (a transaction comparing its
// create_revision with 0), its value naming the head's id and address and
// the key bound to the lease. The one whose write landed leads, and the key's
// create_revision is its leader revision, which fences its writes
// (fenced_txn.h). The others stand by, watching the key, and campaign again
// when it is deleted: resigned, or its lease expired.
//
// The leader keeps its lease alive. When keepalives fail it stops acting as
// leader on its own, ha_step_down_margin_ms before the lease could expire
// in etcd (LeaderLease): IsLeader() is false from that moment on whatever
// its threads are doing, and on_change(false) is called. Once etcd answers
// again it revokes the old lease (so that its key goes at once) and
// campaigns again like any candidate.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "common/waitable_clock.h"
#include "daemon/ha/etcd_client.h"
#include "daemon/ha/fenced_txn.h"
#include "daemon/ha/leader_lease.h"

namespace clusterd {

struct LeaderElectionOptions {
  std::string prefix;   // EtcdEndpoints::prefix; the leader key is prefix + "/leader"
  std::string id;       // this head's id, unique among the heads
  std::string address;  // where clients and agents reach this head (host:port)
  int lease_ttl_ms = 2000;         // ha_lease_ttl_ms (etcd grants whole seconds: rounded up)
  int step_down_margin_ms = 500;   // ha_step_down_margin_ms
  // Called when this head starts or stops leading, from the election's
  // threads, one call at a time and in order. It may read the election's
  // state, and may not Resign() or destroy it.
  std::function<void(bool leading)> on_change;
};

// A bad option is an InvalidArgument naming it.
Status ValidateLeaderElectionOptions(const LeaderElectionOptions& options);

// The deadline of a leader's keepalive on one member: short enough that,
// when a member hangs, the next one of the list is asked before the leader
// would have to step down (half the time between a keepalive and the
// step-down; 416 ms with the defaults), at least 100 ms and at most the
// client's call deadline.
int KeepaliveTimeoutMs(int64_t granted_ttl_s, int step_down_margin_ms, int call_timeout_ms);

// Who leads, as a value of the leader key.
struct LeaderIdentity {
  std::string id;
  std::string address;
};
std::string EncodeLeaderValue(const LeaderIdentity& leader);
// A value that is not such JSON (written by something else) is returned as
// the id, whole, with no address.
LeaderIdentity DecodeLeaderValue(const std::string& value);

struct LeadershipState {
  bool leading = false;
  int64_t leading_since_unix_ms = 0;  // when this head began leading (0: it does not lead)
  int64_t leader_revision = 0;        // the leader key's create_revision while this head leads, else 0
  // Who leads now, as last seen in etcd ("" when nobody is known to). A
  // standby names no leader when its last read of the leader key failed, or
  // succeeded longer ago than a lease's TTL and an etcd call: it cannot
  // confirm that lease.
  LeaderIdentity leader;
  // Why this head's last call to etcd as a candidate failed, or that its
  // read of the leader key is late so the leader cannot be confirmed (""
  // when etcd answered): while it is set a standby names no leader.
  std::string etcd_failure;
  // Since the send of the last keepalive etcd acknowledged (-1: not leading).
  int64_t lease_age_ms = -1;
  // Why this head last stopped leading ("" if it never did).
  std::string last_step_down_reason;
};

class LeaderElection {
 public:
  // The client must outlive the election. Call Start() to campaign.
  LeaderElection(EtcdClient* client, LeaderElectionOptions options,
                 const WaitableClock* clock = SystemWaitableClock::Shared());
  ~LeaderElection();  // Resign()

  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Starts campaigning (and, once leading, keeping the lease alive) on
  // threads of its own. Invalid options are refused.
  Status Start();
  // Stops campaigning; a leader stops leading and revokes its lease, so
  // that its key goes and a standby takes over at once rather than after
  // the TTL. Waits for the election's threads.
  void Resign();

  // Whether this head leads now: it won, etcd acknowledged its lease less
  // than TTL - margin ago, and nothing showed it deposed.
  bool IsLeader() const;
  LeadershipState State() const;
  const std::string& leader_key() const { return leader_key_; }

  // Applies `ops` fenced by this head's leader revision (fenced_txn.h).
  // FailedPrecondition when it does not lead; an outcome with deposed = true
  // when etcd says another leads, and then this head has stepped down.
  Result<FencedTxnOutcome> FencedTxn(const std::vector<EtcdOp>& ops);

 private:
  void CampaignLoop();
  // One campaign; stands by while another leads.
  void Campaign();
  // Waits, watching the leader key from `seen_revision` + 1, until it is
  // deleted (or a TTL passes, or stopping), knowing `holder` leads. A key of
  // this head's own (a lease it led with and did not get to revoke) is
  // freed instead.
  void StandBy(const EtcdKeyValue& holder, int64_t seen_revision);
  // One round of keeping the lease alive while leading.
  void KeepLeading();
  // Stops leading, if it does; its lease is left to revoke once etcd answers.
  void StepDownLocked(const std::string& reason);
  // Ends leadership at its lease's ActUntil() even while the campaign
  // thread is stuck in a call to an unreachable etcd.
  void WatchdogLoop();
  // Tells on_change what leading_ is now, if that is news.
  void Notify();
  // A candidate's call to etcd failed: no leader is known until one answers.
  void EtcdFailed(const Status& status);
  // Whether leader_ was confirmed in etcd recently enough to name. REQUIRES: mutex_
  bool LeaderConfirmedLocked(Micros now) const;
  // Waits (on the clock) for `wait_us`, or until stopping; true if stopping.
  bool PauseOrStop(Micros wait_us);

  EtcdClient* const client_;
  const LeaderElectionOptions options_;
  const std::string leader_key_;
  const WaitableClock* const clock_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool started_ = false;
  bool stopping_ = false;
  bool leading_ = false;
  int64_t lease_id_ = 0;         // the lease this head leads with
  int64_t stale_lease_id_ = 0;   // a lease it led with and has not revoked yet
  int64_t lease_ttl_s_ = 0;      // as etcd granted it
  LeaderLease lease_;
  int64_t leader_revision_ = 0;
  int64_t leading_since_unix_ms_ = 0;
  LeaderIdentity leader_;
  Micros leader_seen_at_ = 0;  // when etcd last showed leader_ to hold the key
  std::string etcd_failure_;   // LeadershipState::etcd_failure
  std::string last_step_down_reason_;

  std::mutex notify_mutex_;        // one on_change at a time
  bool notified_leading_ = false;  // what on_change last said; guarded by notify_mutex_

  std::thread campaign_thread_;
  std::thread watchdog_thread_;
};

}  // namespace clusterd
