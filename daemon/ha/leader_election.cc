#include "daemon/ha/leader_election.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "common/logging.h"
#include "daemon/ha/etcd_watch.h"

namespace clusterd {
namespace {

// After a failed call to etcd, before the next try.
constexpr Micros kRetryPauseUs = 100'000;

int64_t WholeSeconds(int ms) { return (ms + 999) / 1000; }

}  // namespace

int KeepaliveTimeoutMs(int64_t granted_ttl_s, int step_down_margin_ms, int call_timeout_ms) {
  // A keepalive goes out a third of the TTL after the last acknowledged
  // send and must be acknowledged before the step-down, TTL - margin after
  // it: half that window for a member leaves the other half for the next.
  const int64_t window_ms = granted_ttl_s * 1000 * 2 / 3 - step_down_margin_ms;
  return static_cast<int>(std::clamp<int64_t>(window_ms / 2, 100, std::max(100, call_timeout_ms)));
}

namespace {

}  // namespace

Status ValidateLeaderElectionOptions(const LeaderElectionOptions& options) {
  if (options.id.empty()) return Status::InvalidArgument("leader election: the head's id is empty");
  if (options.address.empty()) return Status::InvalidArgument("leader election: the head's address is empty");
  if (options.lease_ttl_ms <= 0) {
    return Status::InvalidArgument("ha_lease_ttl_ms must be positive, not " + std::to_string(options.lease_ttl_ms));
  }
  if (options.step_down_margin_ms < 100 || options.step_down_margin_ms >= WholeSeconds(options.lease_ttl_ms) * 1000) {
    return Status::InvalidArgument("ha_step_down_margin_ms must be at least 100 and less than the lease's TTL (" +
                                   std::to_string(WholeSeconds(options.lease_ttl_ms) * 1000) + " ms), not " +
                                   std::to_string(options.step_down_margin_ms));
  }
  return Status::Ok();
}

std::string EncodeLeaderValue(const LeaderIdentity& leader) {
  return nlohmann::json{{"id", leader.id}, {"address", leader.address}}.dump();
}

LeaderIdentity DecodeLeaderValue(const std::string& value) {
  const auto json = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("id") && json["id"].is_string()) {
    LeaderIdentity out;
    out.id = json["id"].get<std::string>();
    if (json.contains("address") && json["address"].is_string()) out.address = json["address"].get<std::string>();
    return out;
  }
  return LeaderIdentity{value, ""};
}

LeaderElection::LeaderElection(EtcdClient* client, LeaderElectionOptions options, const WaitableClock* clock)
    : client_(client),
      options_(std::move(options)),
      leader_key_(options_.prefix + "/leader"),
      clock_(clock),
      lease_(options_.step_down_margin_ms) {}

LeaderElection::~LeaderElection() { Resign(); }

Status LeaderElection::Start() {
  RETURN_IF_ERROR(ValidateLeaderElectionOptions(options_));
  std::lock_guard<std::mutex> lock(mutex_);
  if (started_) return Status::FailedPrecondition("leader election: already started");
  started_ = true;
  campaign_thread_ = std::thread([this] { CampaignLoop(); });
  watchdog_thread_ = std::thread([this] { WatchdogLoop(); });
  return Status::Ok();
}

void LeaderElection::Resign() {
  int64_t lease_to_revoke = 0;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!started_ || stopping_) return;
    stopping_ = true;
    StepDownLocked("resigned");
  }
  wake_.notify_all();
  if (campaign_thread_.joinable()) campaign_thread_.join();
  if (watchdog_thread_.joinable()) watchdog_thread_.join();
  Notify();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lease_to_revoke = stale_lease_id_;
    stale_lease_id_ = 0;
  }
  if (lease_to_revoke != 0) {
    const Status revoked = client_->LeaseRevoke(lease_to_revoke);
    if (!revoked.ok()) {
      LOG_WARN("leader election: could not revoke lease {:x} on resigning (it expires by itself): {}",
               lease_to_revoke, revoked.message());
    }
  }
}

bool LeaderElection::IsLeader() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return leading_ && lease_.MayAct(clock_->NowMicros());
}

LeadershipState LeaderElection::State() const {
  std::lock_guard<std::mutex> lock(mutex_);
  LeadershipState state;
  const Micros now = clock_->NowMicros();
  state.leading = leading_ && lease_.MayAct(now);
  if (state.leading) {
    state.leading_since_unix_ms = leading_since_unix_ms_;
    state.leader_revision = leader_revision_;
    state.lease_age_ms = (now - lease_.last_acknowledged_send()) / 1000;
  }
  state.etcd_failure = etcd_failure_;
  if (leading_ || LeaderConfirmedLocked(now)) {
    state.leader = leader_;
  } else if (state.etcd_failure.empty() && !leader_.id.empty()) {
    // A read of the key is under way and late.
    state.etcd_failure = "the leader key was last read " + std::to_string((now - leader_seen_at_) / 1000) +
                         " ms ago, so " + leader_.id + "'s lease cannot be confirmed";
  }
  state.last_step_down_reason = last_step_down_reason_;
  return state;
}

bool LeaderElection::LeaderConfirmedLocked(Micros now) const {
  if (!etcd_failure_.empty() || leader_.id.empty()) return false;
  // A standby reads the key again at least every TTL (StandBy's wait):
  // older than that and an etcd call, its lease may have expired unseen.
  const Micros window =
      static_cast<Micros>(WholeSeconds(options_.lease_ttl_ms)) * 1'000'000 + client_->call_timeout_ms() * 1000LL;
  return now - leader_seen_at_ <= window;
}

void LeaderElection::EtcdFailed(const Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  etcd_failure_ = status.message();
  if (!leading_) leader_ = LeaderIdentity{};
}

Result<FencedTxnOutcome> LeaderElection::FencedTxn(const std::vector<EtcdOp>& ops) {
  int64_t revision = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!(leading_ && lease_.MayAct(clock_->NowMicros()))) {
      return Status::FailedPrecondition("fenced write: this head does not lead");
    }
    revision = leader_revision_;
  }
  auto outcome = ApplyFencedTxn(client_, leader_key_, revision, ops);
  if (outcome.ok() && outcome->deposed) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (leader_revision_ == revision) {
        StepDownLocked("deposed: a fenced write found the leader key no longer ours (revision " +
                       std::to_string(revision) + ")");
      }
    }
    wake_.notify_all();
    Notify();
  }
  return outcome;
}

void LeaderElection::StepDownLocked(const std::string& reason) {
  if (!leading_) return;
  leading_ = false;
  lease_.Clear();
  stale_lease_id_ = lease_id_;
  lease_id_ = 0;
  leader_revision_ = 0;
  leading_since_unix_ms_ = 0;
  last_step_down_reason_ = reason;
  if (leader_.id == options_.id) leader_ = LeaderIdentity{};
  LOG_WARN("leader election: {} stops leading: {}", options_.id, reason);
}

void LeaderElection::Notify() {
  std::lock_guard<std::mutex> notify_lock(notify_mutex_);
  bool leading;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    leading = leading_;
  }
  if (leading == notified_leading_) return;
  notified_leading_ = leading;
  if (options_.on_change) options_.on_change(leading);
}

bool LeaderElection::PauseOrStop(Micros wait_us) {
  std::unique_lock<std::mutex> lock(mutex_);
  return clock_->WaitFor(wake_, lock, wait_us, [this] { return stopping_; });
}

void LeaderElection::WatchdogLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (leading_ && !lease_.MayAct(clock_->NowMicros())) {
      StepDownLocked("no keepalive of its lease acknowledged for " +
                     std::to_string((clock_->NowMicros() - lease_.last_acknowledged_send()) / 1000) +
                     " ms: it stops before the lease can expire in etcd");
      lock.unlock();
      wake_.notify_all();
      Notify();
      lock.lock();
      continue;
    }
    // Until leadership's end, or a change (leading, renewed, stopping).
    const bool was_leading = leading_;
    const Micros until = leading_ ? lease_.ActUntil() : clock_->NowMicros() + 1'000'000;
    const Micros renewed_at = lease_.last_acknowledged_send();
    clock_->WaitUntil(wake_, lock, until, [&] {
      return stopping_ || leading_ != was_leading || lease_.last_acknowledged_send() != renewed_at;
    });
  }
}

void LeaderElection::CampaignLoop() {
  while (true) {
    bool leading;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      leading = leading_;
    }
    if (leading) {
      KeepLeading();
    } else {
      Campaign();
    }
  }
}

void LeaderElection::Campaign() {
  int64_t stale;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stale = stale_lease_id_;
  }
  if (stale != 0) {
    // The lease this head led with may still hold the leader key: revoking
    // it frees the key now rather than at its expiry.
    const Status revoked = client_->LeaseRevoke(stale);
    if (!revoked.ok()) {
      EtcdFailed(revoked);
      PauseOrStop(kRetryPauseUs);
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (stale_lease_id_ == stale) stale_lease_id_ = 0;
  }

  // Read before campaigning: while another leads, a standby costs etcd one
  // read a round, not a lease and a transaction.
  auto current = client_->Get(leader_key_);
  if (!current.ok()) {
    EtcdFailed(current.status());
    PauseOrStop(kRetryPauseUs);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    etcd_failure_.clear();
    leader_seen_at_ = clock_->NowMicros();
    if (current->kvs.empty() && !leading_) leader_ = LeaderIdentity{};
  }
  if (!current->kvs.empty()) {
    StandBy(current->kvs[0], current->revision);
    return;
  }

  const Micros sent = clock_->NowMicros();
  auto grant = client_->LeaseGrant(WholeSeconds(options_.lease_ttl_ms));
  if (!grant.ok()) {
    EtcdFailed(grant.status());
    PauseOrStop(kRetryPauseUs);
    return;
  }
  const std::string value = EncodeLeaderValue({options_.id, options_.address});
  auto txn = client_->Txn({EtcdCompare::CreateRevisionIs(leader_key_, 0)}, {EtcdOp::Put(leader_key_, value, grant->id)},
                          {EtcdOp::Get(leader_key_)});
  if (!txn.ok()) {
    EtcdFailed(txn.status());
    // Whether the put landed is unknown: revoke the lease before trying again.
    std::lock_guard<std::mutex> lock(mutex_);
    stale_lease_id_ = grant->id;
    return;
  }
  if (txn->succeeded) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) {
        stale_lease_id_ = grant->id;
        return;
      }
      leading_ = true;
      lease_id_ = grant->id;
      lease_ttl_s_ = grant->ttl_s;
      lease_.Acknowledged(sent, grant->ttl_s);
      leader_revision_ = txn->revision;
      leading_since_unix_ms_ = clock_->UnixMillis();
      leader_ = LeaderIdentity{options_.id, options_.address};
      LOG_INFO("leader election: {} leads (leader revision {}, lease {:x}, TTL {} s)", options_.id, txn->revision,
               grant->id, grant->ttl_s);
    }
    wake_.notify_all();
    Notify();
    return;
  }

  // Another won since the read: this lease is not needed.
  (void)client_->LeaseRevoke(grant->id);  // unrevoked, it expires by itself
  if (txn->reads.empty() || txn->reads[0].empty()) return;  // gone meanwhile: campaign again
  StandBy(txn->reads[0][0], txn->revision);
}

void LeaderElection::StandBy(const EtcdKeyValue& holder, int64_t seen_revision) {
  const LeaderIdentity identity = DecodeLeaderValue(holder.value);
  if (identity.id == options_.id) {
    // A key of this head's own from before it stepped down (a lease it did
    // not get to revoke): free it, and campaign again.
    (void)client_->LeaseRevoke(holder.lease);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    leader_ = identity;
    leader_seen_at_ = clock_->NowMicros();
  }

  // Until the key is deleted. The wait is bounded so that a watch stuck on
  // a member cut off from the others is noticed: the next round reads the
  // key again.
  bool deleted = false;
  EtcdWatch watch(client_, leader_key_, /*prefix=*/false, seen_revision + 1,
                  [&](const std::vector<EtcdEvent>& events) {
                    std::lock_guard<std::mutex> lock(mutex_);
                    for (const auto& event : events) {
                      if (event.type == EtcdEvent::Type::kDelete) {
                        deleted = true;
                        leader_ = LeaderIdentity{};
                      } else {
                        leader_ = DecodeLeaderValue(event.kv.value);
                        leader_seen_at_ = clock_->NowMicros();
                      }
                    }
                    wake_.notify_all();
                  });
  {
    std::unique_lock<std::mutex> lock(mutex_);
    clock_->WaitFor(wake_, lock, static_cast<Micros>(WholeSeconds(options_.lease_ttl_ms)) * 1'000'000,
                    [&] { return stopping_ || deleted; });
  }
  watch.Stop();
}

void LeaderElection::KeepLeading() {
  int64_t lease_id;
  int64_t revision;
  int64_t ttl_s;
  Micros next;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lease_id = lease_id_;
    revision = leader_revision_;
    ttl_s = lease_ttl_s_;
    // A keepalive each third of the TTL: two may fail before the margin.
    next = lease_.last_acknowledged_send() + lease_ttl_s_ * 1'000'000 / 3;
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    clock_->WaitUntil(wake_, lock, next, [&] { return stopping_ || !leading_ || lease_id_ != lease_id; });
    if (stopping_ || !leading_ || lease_id_ != lease_id) return;
  }
  const Micros sent = clock_->NowMicros();
  auto ttl = client_->LeaseKeepAliveOnce(lease_id, KeepaliveTimeoutMs(ttl_s, options_.step_down_margin_ms,
                                                                      client_->call_timeout_ms()));
  if (!ttl.ok()) {
    if (ttl.status().code() == Status::Code::kNotFound) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (lease_id_ == lease_id) StepDownLocked("its lease is gone from etcd: " + ttl.status().message());
      }
      wake_.notify_all();
      Notify();
      return;
    }
    // Unreachable: the watchdog ends leadership at the lease's ActUntil if
    // no keepalive gets through before it.
    PauseOrStop(kRetryPauseUs);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lease_id_ != lease_id) return;
    lease_.Acknowledged(sent, *ttl);
  }
  wake_.notify_all();
  // The key could be gone with the lease alive (deleted by hand): check
  // that it is still this head's, from the same revision.
  auto key = client_->Get(leader_key_);
  if (!key.ok() || (!key->kvs.empty() && key->kvs[0].create_revision == revision)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lease_id_ != lease_id) return;
    StepDownLocked("deposed: the leader key " + leader_key_ + " is " +
                   (key->kvs.empty() ? std::string("gone") : "another's"));
  }
  wake_.notify_all();
  Notify();
}

}  // namespace clusterd
