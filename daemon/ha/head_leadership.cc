#include "daemon/ha/head_leadership.h"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/logging.h"

namespace clusterd {

namespace {

int64_t NowUnixMs() { return SystemClock().UnixMillis(); }

std::string HeadsPrefix(const std::string& prefix) { return prefix + "/heads/"; }

}  // namespace

HeadLeadership::HeadLeadership(HeadLeadershipOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<HeadLeadership>> HeadLeadership::Start(HeadLeadershipOptions options) {
  std::unique_ptr<HeadLeadership> leadership(new HeadLeadership(std::move(options)));
  RETURN_IF_ERROR(leadership->Begin());
  return leadership;
}

Status HeadLeadership::Begin() {
  EtcdClientOptions client_options;
  client_options.members = options_.endpoints.members;
  client_options.call_timeout_ms = options_.call_timeout_ms;
  client_options.tls = options_.tls;
  ASSIGN_OR_RETURN(client_, EtcdClient::Create(client_options));
  ASSIGN_OR_RETURN(standby_,
                   StandbyServer::Start(options_.standby, [this] { return LeaderView(); }, &heads_service_));
  RedirectDashboard();
  started_unix_ms_ = NowUnixMs();
  RETURN_IF_ERROR(Campaign());
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

Status HeadLeadership::Campaign() {
  LeaderElectionOptions election_options;
  election_options.prefix = options_.endpoints.prefix;
  election_options.id = options_.id;
  election_options.address = options_.address;
  election_options.lease_ttl_ms = options_.lease_ttl_ms;
  election_options.step_down_margin_ms = options_.step_down_margin_ms;
  election_options.on_change = [this](bool leading) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      want_leading_ = leading;
    }
    wake_.notify_all();
  };
  auto election = std::make_unique<LeaderElection>(client_.get(), election_options);
  RETURN_IF_ERROR(election->Start());
  std::lock_guard<std::mutex> lock(election_mutex_);
  election_ = std::move(election);
  return Status::Ok();
}

HeadLeadership::~HeadLeadership() { Stop(); }

void HeadLeadership::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Serving has stopped: a standby may lead at once.
  std::unique_ptr<LeaderElection> election;
  {
    std::lock_guard<std::mutex> lock(election_mutex_);
    election = std::move(election_);
  }
  if (election) election->Resign();
  standby_.reset();
  dashboard_redirect_.reset();
  if (registration_lease_ != 0 && client_) {
    Status revoked = client_->LeaseRevoke(registration_lease_);
    if (!revoked.ok()) LOG_WARN("HA: could not take this head's registration out of etcd: {}", revoked.message());
  }
}

LeadershipState HeadLeadership::State() const {
  std::lock_guard<std::mutex> lock(election_mutex_);
  return election_ ? election_->State() : LeadershipState{};
}

std::string HeadLeadership::LeaderAddress() const {
  LeadershipState state = State();
  // This head's own address while it is not serving yet would send callers
  // back here.
  if (state.leader.address == options_.address && !serving()) return "";
  return state.leader.address;
}

StandbyServer::LeaderView HeadLeadership::LeaderView() const {
  const LeadershipState state = State();
  StandbyServer::LeaderView view;
  view.address = state.leader.address == options_.address && !serving() ? "" : state.leader.address;
  if (view.address.empty() && !state.etcd_failure.empty()) {
    view.why_none = "no leader: etcd does not answer: " + state.etcd_failure;
  }
  return view;
}

bool HeadLeadership::serving() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return serving_;
}

void HeadLeadership::Run() {
  const auto keepalive_every = std::chrono::milliseconds(std::max(100, options_.lease_ttl_ms / 3));
  auto next_keepalive = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (deposed_) {
      deposed_ = false;
      lock.unlock();
      LOG_WARN("HA: etcd refused this head's write as a deposed leader's: it stops serving and campaigns again");
      BecomeStandby();
      Resign();
      lock.lock();
      continue;
    }
    if (want_leading_ && !serving_) {
      lock.unlock();
      BecomeLeader();
      lock.lock();
      continue;
    }
    if (!want_leading_ && serving_) {
      lock.unlock();
      BecomeStandby();
      lock.lock();
      continue;
    }
    if (!serving_ && !standby_) {
      // The port was not free when this head stopped leading: again.
      lock.unlock();
      BecomeStandby();
      lock.lock();
    }
    if (std::chrono::steady_clock::now() >= next_keepalive) {
      lock.unlock();
      KeepRegistered();
      lock.lock();
      next_keepalive = std::chrono::steady_clock::now() + keepalive_every;
    }
    wake_.wait_until(lock, next_keepalive,
                     [this] { return stopping_ || deposed_ || want_leading_ != serving_; });
  }
  const bool was_serving = serving_;
  serving_ = false;
  lock.unlock();
  if (was_serving) options_.stop_leading();
}

void HeadLeadership::BecomeLeader() {
  LeadershipState state = State();
  LOG_INFO("HA: this head leads (leader revision {}): loading the cluster's state", state.leader_revision);
  if (standby_) standby_->Stop();
  standby_.reset();
  dashboard_redirect_.reset();
  LeaderTerm term;
  term.etcd = client_.get();
  term.prefix = options_.endpoints.prefix;
  term.leader_revision = state.leader_revision;
  term.heads_service = &heads_service_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    term_ += 1;
    deposed_ = false;
    term.deposed = [this, number = term_] {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (number != term_ || !serving_) return;
        deposed_ = true;
      }
      wake_.notify_all();
    };
  }
  Status led = options_.lead(term);
  if (led.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    serving_ = true;
    LOG_INFO("HA: this head serves as the leader at {}", options_.address);
    return;
  }
  LOG_ERROR("HA: this head won the election but cannot serve ({}): it resigns and campaigns again", led.message());
  options_.stop_leading();
  Resign();
}

void HeadLeadership::BecomeStandby() {
  bool was_serving = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    was_serving = serving_;
    serving_ = false;
  }
  if (was_serving) {
    LOG_WARN("HA: this head no longer leads ({}): it stops serving and stands by",
             State().last_step_down_reason);
    options_.stop_leading();
  }
  if (!dashboard_redirect_) RedirectDashboard();
  if (standby_) return;
  auto standby = StandbyServer::Start(options_.standby, [this] { return LeaderView(); }, &heads_service_);
  if (!standby.ok()) {
    LOG_ERROR("HA: {}", standby.status().message());
    return;
  }
  standby_ = std::move(*standby);
}

void HeadLeadership::RedirectDashboard() {
  if (options_.dashboard_port <= 0) return;
  auto redirect = DashboardRedirect::Start(options_.dashboard_host, options_.dashboard_port,
                                           options_.standby.bind_wait_ms, [this] { return LeaderDashboard(); });
  if (!redirect.ok()) {
    LOG_WARN("HA: {}", redirect.status().message());
    return;
  }
  dashboard_redirect_ = std::move(*redirect);
}

std::string HeadLeadership::LeaderDashboard() const {
  const std::string leader = State().leader.id;
  if (leader.empty() || LeaderAddress().empty()) return "";
  auto heads = Heads();
  if (!heads.ok()) return "";
  for (const RegisteredHead& head : *heads) {
    if (head.id == leader) return head.dashboard_url;
  }
  return "";
}

void HeadLeadership::Resign() {
  std::unique_ptr<LeaderElection> old;
  {
    std::lock_guard<std::mutex> lock(election_mutex_);
    old = std::move(election_);
  }
  if (old) old->Resign();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    want_leading_ = false;
  }
  BecomeStandby();
  Status campaigning = Campaign();
  if (!campaigning.ok()) LOG_ERROR("HA: cannot campaign again: {}", campaigning.message());
}

void HeadLeadership::KeepRegistered() {
  if (registration_lease_ != 0) {
    auto renewed = client_->LeaseKeepAliveOnce(registration_lease_);
    if (renewed.ok()) return;
    if (renewed.status().code() != Status::Code::kNotFound) return;  // etcd away: the lease may still live
    registration_lease_ = 0;
  }
  const int64_t ttl_s = std::max<int64_t>(1, (options_.lease_ttl_ms + 999) / 1000);
  auto lease = client_->LeaseGrant(ttl_s);
  if (!lease.ok()) return;
  const std::string value = nlohmann::json{{"id", options_.id},
                                           {"address", options_.address},
                                           {"dashboard", options_.dashboard_url},
                                           {"started_unix_ms", started_unix_ms_}}
                                .dump();
  auto put = client_->Put(HeadsPrefix(options_.endpoints.prefix) + options_.id, value, lease->id);
  if (!put.ok()) {
    (void)client_->LeaseRevoke(lease->id);
    return;
  }
  registration_lease_ = lease->id;
}

Result<std::vector<RegisteredHead>> HeadLeadership::Heads() const {
  ASSIGN_OR_RETURN(EtcdRange range, client_->GetPrefix(HeadsPrefix(options_.endpoints.prefix)));
  std::vector<RegisteredHead> heads;
  for (const EtcdKeyValue& kv : range.kvs) {
    const auto json = nlohmann::json::parse(kv.value, nullptr, /*allow_exceptions=*/false);
    RegisteredHead head;
    head.id = kv.key.substr(HeadsPrefix(options_.endpoints.prefix).size());
    if (json.is_object()) {
      if (json.contains("address") && json["address"].is_string()) head.address = json["address"].get<std::string>();
      if (json.contains("dashboard") && json["dashboard"].is_string()) {
        head.dashboard_url = json["dashboard"].get<std::string>();
      }
      if (json.contains("started_unix_ms") && json["started_unix_ms"].is_number_integer()) {
        head.started_unix_ms = json["started_unix_ms"].get<int64_t>();
      }
    }
    heads.push_back(std::move(head));
  }
  return heads;
}

}  // namespace clusterd
