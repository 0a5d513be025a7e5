#include "daemon/daemon.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/algorithm/string/replace.hpp>
#include <boost/asio/steady_timer.hpp>
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/job_state.h"
#include "common/logging.h"
#include "common/net/net_address.h"
#include "common/process_record.h"
#include "common/session.h"
#include "daemon/agent/node_agent.h"
#include "daemon/agent/python_package.h"
#include "daemon/event_loop.h"
#include "daemon/ha/etcd_cluster_id.h"
#include "daemon/ha/etcd_state_stores.h"
#include "daemon/ha/head_leadership.h"
#include "daemon/ha/log_mirror.h"
#include "daemon/http/dashboard.h"
#include "daemon/head/head_core.h"
#include "daemon/head/job_store.h"
#include "daemon/head/journal_syncer.h"
#include "common/logs/log_store.h"
#include "daemon/head/state_lock.h"
#include "daemon/head_state_files.h"
#include "daemon/rpc/grpc_port_listener.h"
#include "daemon/rpc/server_limits.h"
#include "daemon/rpc/agent_service.h"
#include "daemon/rpc/agent_wire_server.h"
#include "daemon/rpc/head_service.h"
#include "daemon/rpc/store_service.h"
#include "daemon/stop_signals.h"
#include "daemon/store/blob_store.h"
#include "common/storage/cluster_storage.h"

namespace clusterd {

namespace {

// Re-arms itself for whenever the core next needs a look at the clock,
// and sooner when the core, between ticks, sets a deadline before that
// (WantBy; on the loop, as the core runs).
class LivenessTimer {
 public:
  LivenessTimer(EventLoop* loop, HeadCore* core) : timer_(loop->context()), core_(core) {}
  void Arm() { ArmFor(core_->Tick()); }
  void WantBy(Micros at) {
    if (armed_at_ == 0 || at < armed_at_) ArmFor(at);
  }
  void Cancel() { timer_.cancel(); }

 private:
  void ArmFor(Micros at) {
    Micros now = clock_.NowMicros();
    armed_at_ = std::max<Micros>(at, now + 1000);
    // Replaces a wait under way, whose handler then sees operation_aborted.
    timer_.expires_after(std::chrono::microseconds(armed_at_ - now));
    timer_.async_wait([this](const boost::system::error_code& error) {
      if (!error) Arm();
    });
  }

  SystemClock clock_;
  boost::asio::steady_timer timer_;
  HeadCore* core_;
  Micros armed_at_ = 0;
};

struct Head {
  // An HA head locks its state folder once, before its first term as leader.
  bool state_folder_locked = false;
  SystemClock clock;
  EventLoop loop{"head-loop"};
  // Outlives the core: a sync under way posts its result to the loop only.
  std::unique_ptr<JournalSyncer> syncer;
  // Files in the state folder; in etcd for a leader in HA.
  std::unique_ptr<JobStore> store;
  std::unique_ptr<JobStore> sweep_store;
  std::unique_ptr<JobStore> node_store;
  std::unique_ptr<JobStore> user_store;
  std::unique_ptr<JobStore> quota_store;
  // A leader's rank logs on to S3 (in HA); outlives the store that tells it.
  std::unique_ptr<LogMirror> log_mirror;
  std::unique_ptr<LogStore> logs;
  std::unique_ptr<BlobStore> blobs;
  std::unique_ptr<HeadCore> core;
  std::unique_ptr<HeartbeatReceiver> heartbeats;  // outlives the agent port, which reaches it
  std::unique_ptr<AgentWireServer> agent_wire;      // the agents' streams
  std::unique_ptr<AgentService> agent_service;
  std::unique_ptr<HeadServiceImpl> head_service;
  std::unique_ptr<StoreServiceImpl> store_service;
  std::unique_ptr<TlsBridge> grpc_tls;          // terminates TLS for gRPC, with --tls-cert
  std::unique_ptr<GrpcPortListener> grpc_port;  // takes the gRPC port's connections
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<LivenessTimer> timer;
  std::unique_ptr<Dashboard> dashboard;
  std::string dashboard_note;  // where it listens, or why it does not
  std::string heartbeat_note;  // where heartbeat datagrams go when not to the agents' port; else ""
  std::string agent_port_note;  // where the agents' streams connect
};

// The agents' streams on their own TCP port: --agent-port when given (0:
// any free port), else the one after --port, so that a firewall opens two
// neighbours; taken by another program, any free port will do (agents ask
// the head which), and the banner says so.
Status StartAgentPort(const std::string& bind_ip, const DaemonOptions& options, Head* head) {
  const bool chosen = options.config.agent_port >= 0;
  const int wanted = chosen ? options.config.agent_port : (options.config.port < 65535 ? options.config.port + 1 : 0);
  head->agent_wire = std::make_unique<AgentWireServer>(head->core.get(), &head->loop, HeadPortGuard(options.config));
  Status listening = head->agent_wire->Start(bind_ip, wanted, options.tls);
  std::string taken;
  if (!listening.ok() && !chosen && wanted != 0) {
    taken = listening.message();
    head->agent_wire = std::make_unique<AgentWireServer>(head->core.get(), &head->loop, HeadPortGuard(options.config));
    listening = head->agent_wire->Start(bind_ip, 0, options.tls);
  }
  RETURN_IF_ERROR(listening);
  head->agent_service->set_agent_port(head->agent_wire->port());
  head->agent_port_note = fmt::format("Node agents connect to TCP port {}{}{}", head->agent_wire->port(),
                                      taken.empty() ? "" : " (" + taken + ")",
                                      IsLoopbackAddress(bind_ip) ? "" : ": let workers reach it, with the head's port");
  if (!taken.empty()) LOG_WARN("{}", head->agent_port_note);
  return Status::Ok();
}

// Heartbeats as datagrams on the agents' port number, for UDP: a firewall
// that lets the port through likely lets both. Taken by another program,
// any free port will do (the agents are told which); none at all, and the
// heartbeats stay on the streams, as they work without it. Returns what
// the banner and the log must say about it: "" when all went as planned.
std::string StartHeartbeatDatagrams(const std::string& bind_ip, int port, int heartbeat_ms, Head* head) {
  auto receiver = HeartbeatReceiver::Start(bind_ip, port, &head->clock, heartbeat_ms);
  std::string taken;
  if (!receiver.ok()) {
    taken = receiver.status().message();
    receiver = HeartbeatReceiver::Start(bind_ip, 0, &head->clock, heartbeat_ms);
  }
  if (!receiver.ok()) {
    return fmt::format("Heartbeats: on the agents' streams only ({}; {})", taken, receiver.status().message());
  }
  head->heartbeats = std::move(*receiver);
  head->agent_wire->set_datagrams(head->heartbeats.get());
  if (taken.empty()) return "";
  return fmt::format("Heartbeats: as datagrams to UDP port {} ({}): let workers reach it, or theirs ride their "
                     "streams at more CPU here",
                     head->heartbeats->port(), taken);
}

// `term`: a leader's in HA, whose state is in etcd; null: a single head's,
// whose state is its journals' files.
Status StartHead(const DaemonOptions& options, const std::string& token, const std::string& address, Head* head,
                 const LeaderTerm* term = nullptr) {
  const std::string& state_dir = options.state_dir;
  // One head per state folder: a second one must not touch the journal.
  // The lock lives as long as this process (the fd is never closed). The
  // wait is fixed: it only covers a restart that begins while the old head
  // is still exiting, whose lock goes with its process.
  if (!head->state_folder_locked) {
    auto lock = LockStateFolder(state_dir, std::chrono::seconds(5));
    if (!lock.ok()) return lock.status();
  }
  if (term) {
    auto stores = OpenEtcdStateStores(term->etcd, term->prefix, term->leader_revision, options.config,
                                      [deposed = term->deposed](const Status&) { deposed(); });
    if (!stores.ok()) return stores.status().WithContext("the cluster's state in etcd");
    head->store = std::move(stores->jobs);
    head->sweep_store = std::move(stores->sweeps);
    head->node_store = std::move(stores->nodes);
    head->user_store = std::move(stores->users);
    head->quota_store = std::move(stores->quotas);
  } else {
    auto store = FileJobStore::Open(state_dir + "/journal");
    if (!store.ok()) return store.status().WithContext("the head's journal");
    head->store = std::move(*store);
    auto sweep_store = FileJobStore::Open(state_dir + "/sweeps.journal");
    if (!sweep_store.ok()) return sweep_store.status().WithContext("the sweeps' journal");
    head->sweep_store = std::move(*sweep_store);
    auto node_store = FileJobStore::Open(state_dir + "/nodes.journal");
    if (!node_store.ok()) return node_store.status().WithContext("the nodes' journal");
    head->node_store = std::move(*node_store);
    auto user_store = FileJobStore::Open(state_dir + "/users.journal");
    if (!user_store.ok()) return user_store.status().WithContext("the users' journal");
    head->user_store = std::move(*user_store);
    auto quota_store = FileJobStore::Open(state_dir + "/quotas.journal");
    if (!quota_store.ok()) return quota_store.status().WithContext("the quotas' journal");
    head->quota_store = std::move(*quota_store);
  }
  // A leader in HA keeps its logs in a folder of its own, emptied at each
  // term: they are read back from S3, which holds them for every head.
  const std::string logs_dir = state_dir + (term && !options.store.empty() ? "/ha-logs" : "/jobs");
  if (term && !options.store.empty()) RETURN_IF_ERROR(RemoveTree(logs_dir).WithContext("the rank logs' folder"));
  head->logs = std::make_unique<LogStore>(logs_dir, LogStore::kDefaultPackedLimit,
                                          options.config.log_store_limit_mb * (int64_t{1} << 20),
                                          options.config.log_store_min_free_mb * (int64_t{1} << 20));
  if (term && !options.store.empty()) {
    LogMirror::Options mirror;
    mirror.flush_ms = options.config.ha_log_flush_ms;
    mirror.chunk_bytes = int64_t{options.config.ha_log_chunk_kb} << 10;
    mirror.buffer_bytes = int64_t{options.config.ha_log_buffer_mb} << 20;
    mirror.term = term->leader_revision;
    ASSIGN_OR_RETURN(head->log_mirror, LogMirror::Open(options.store, options.s3_endpoint, mirror));
  }
  // The endpoint goes to every machine even when the cluster's store is the
  // head's: a job may keep its checkpoints or outputs in S3 of its own.
  StoreLocation location;
  location.set_s3_endpoint(options.s3_endpoint);
  location.set_s3_part_bytes(options.s3_part_mb << 20);
  if (options.store.empty()) {
    BlobStore::Options store_options;
    store_options.dir = state_dir + "/store";
    store_options.capacity_bytes = options.config.store_capacity_mb * (int64_t{1} << 20);
    store_options.upload_grace_s = options.config.store_upload_grace_s;
    auto blobs = BlobStore::Open(store_options);
    if (!blobs.ok()) return blobs.status().WithContext("the head's store");
    head->blobs = std::move(*blobs);
  } else {
    // Blobs in S3: the head holds none, only their ids in its journal. Its
    // own credentials are checked now, so that a missing bucket, wrong
    // keys or an unreachable endpoint fail the start in one line.
    location.set_url(options.store);
    auto s3 = OpenS3Storage(options.store, options.s3_endpoint, location.s3_part_bytes(), /*check=*/true);
    if (!s3.ok()) return s3.status().WithContext("--store " + options.store);
  }
  head->core = std::make_unique<HeadCore>(&head->clock, options.config, head->store.get(), head->logs.get(),
                                          head->blobs.get(), head->sweep_store.get(), head->node_store.get(),
                                          head->user_store.get());
  // The state folder's token is the admin user's (an old folder's too).
  head->core->users().SetAdminToken(token);
  head->core->jobs().set_external_store(!options.store.empty());
  head->core->set_quota_store(head->quota_store.get());
  // Evictions happen on whichever thread needed room; the job records that
  // say so are the loop's.
  if (head->blobs) {
    head->blobs->set_on_released(
        [loop = &head->loop, core = head->core.get()](const std::string& owner, const std::string& why) {
          loop->Post([core, owner, why] { core->jobs().OnDataReleased(owner, why); });
        });
  }
  // A leader's messages to agents wait for its fenced writes: deposed, it acts on nothing.
  if (term) head->core->GateSendsOnJournal();
  // Only a leader in HA gives its restored nodes ha_node_return_ms: their
  // agents must first find it among the heads. A single head's find it at once.
  if (term) head->core->set_restored_node_grace(static_cast<Micros>(options.config.ha_node_return_ms) * 1000);
  RETURN_IF_ERROR(head->core->Restore().WithContext("replaying the head's journal"));
  if (head->log_mirror) {
    // Before serving, only the logs of jobs that are not final: their ranks
    // may be adopted and print on after them. A final job's log is read
    // back after the head serves (log_mirror.h), so that the wait does not
    // grow with the cluster's history.
    const JobManager& jobs = head->core->jobs();
    auto when = [&jobs](const std::string& job_id) {
      const JobInfo* info = jobs.InfoOf(job_id);
      if (!info) return LogMirror::ReadBack::kNever;
      return IsTerminal(info->state()) ? LogMirror::ReadBack::kLater : LogMirror::ReadBack::kNow;
    };
    RETURN_IF_ERROR(head->log_mirror->Seed(head->logs.get(), when).WithContext("reading the rank logs back from S3"));
    head->logs->set_observer(head->log_mirror.get());
    head->logs->set_offsets_may_run_ahead(true);
  }
  // From here on the journal syncs off the loop, a burst of changes at once.
  head->syncer = std::make_unique<JournalSyncer>(&head->loop);
  head->core->jobs().set_journal_syncing(head->syncer->Hooks());
  head->core->set_head_address(address);
  ASSIGN_OR_RETURN(std::string cluster_id, ClusterId(state_dir));
  if (term) {
    // One id for the cluster, whichever head leads: the first leader's
    // folder's, kept in etcd (etcd_cluster_id.h).
    auto shared_id = EtcdClusterId(term->etcd, term->prefix, cluster_id);
    if (!shared_id.ok()) return shared_id.status().WithContext("the cluster's id in etcd");
    cluster_id = *shared_id;
  }
  head->core->jobs().set_cluster_id(cluster_id);
  head->core->sweeps().set_cluster_id(cluster_id);
  head->core->set_local_addresses(LocalAddresses());
  const UserRegistry* users = &head->core->users();
  head->agent_service = std::make_unique<AgentService>(users);
  head->head_service = std::make_unique<HeadServiceImpl>(head->core.get(), &head->loop);
  if (head->log_mirror) {
    head->head_service->set_logs_ready([mirror = head->log_mirror.get()](const std::string& job_id) {
      return mirror->WaitForJob(job_id, LogMirror::kReadBackWait);
    });
  }
  head->store_service =
      std::make_unique<StoreServiceImpl>(head->blobs.get(), users, location, &head->core->node_blobs());

  // A loopback address keeps the cluster on this machine (tests, a laptop);
  // any other listens on every interface, so that other machines reach it
  // whichever of this machine's addresses they route to.
  std::string bind_ip = IsLoopbackAddress(options.node_ip) ? options.node_ip : "0.0.0.0";
  std::string bind = fmt::format("{}:{}", bind_ip, options.config.port);
  RETURN_IF_ERROR(StartAgentPort(bind_ip, options, head));
  grpc::ServerBuilder builder;
  int bound_port = 0;
  // The head takes the port's connections itself (grpc_port_listener.h),
  // so gRPC has no listening port of its own.
  if (options.tls.on()) {
    auto bridge = TlsBridge::Start(options.tls, options.config.unproven_connection_timeout_ms);
    if (!bridge.ok()) return bridge.status();
    head->grpc_tls = std::move(*bridge);
  }
  head->grpc_port = std::make_unique<GrpcPortListener>(HeadPortGuard(options.config), head->grpc_tls.get());
  if (head->grpc_port->Bind(bind_ip, options.config.port).ok()) bound_port = head->grpc_port->port();
  // Node agents' connections ping as a backstop (head_liveness.h), and a
  // client may ping more often; without these the head would answer
  // pings with GOAWAY ("too_many_pings") and drop healthy agents.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 500);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  LimitHeadServer(&builder, options.config);
  builder.RegisterService(head->agent_service.get());
  builder.RegisterService(head->head_service.get());
  builder.RegisterService(head->store_service.get());
  if (term && term->heads_service) builder.RegisterService(term->heads_service);
  head->server = builder.BuildAndStart();
  if (!head->server || bound_port == 0) {
    return Status::Unavailable(fmt::format(
        "cannot listen on {}: the port is in use or not allowed (is another head running? try "
        "`clusterctl status --address {}:{}`)", bind, options.node_ip, options.config.port));
  }
  if (head->grpc_port) head->grpc_port->Serve(head->server.get());
  head->heartbeat_note = StartHeartbeatDatagrams(bind_ip, bound_port, options.config.heartbeat_ms, head);
  if (!head->heartbeat_note.empty()) LOG_WARN("{}", head->heartbeat_note);
  head->loop.Start();
  if (head->log_mirror) {
    head->log_mirror->ReadBackLater([loop = &head->loop](std::function<void()> fn) { loop->Post(std::move(fn)); });
  }
  head->timer = std::make_unique<LivenessTimer>(&head->loop, head->core.get());
  head->core->set_tick_wanted([timer = head->timer.get()](Micros at) { timer->WantBy(at); });
  head->loop.Post([timer = head->timer.get()] { timer->Arm(); });
  // The dashboard is a convenience: a taken port is a warning, not a failed start.
  Dashboard::Sources dashboard_sources{head->logs.get(), head->blobs.get()};
  if (head->log_mirror) {
    dashboard_sources.logs_ready = [mirror = head->log_mirror.get()](const std::string& job_id) {
      return mirror->WaitForJob(job_id, std::chrono::milliseconds(0));
    };
  }
  head->dashboard = std::make_unique<Dashboard>(&head->loop, head->core.get(), &head->core->users(),
                                                dashboard_sources);
  Status dashboard = head->dashboard->Start(options.dashboard_host, options.config.dashboard_port);
  if (dashboard.ok()) {
    std::string shown = options.dashboard_host == "0.0.0.0" ? options.node_ip : options.dashboard_host;
    head->dashboard_note = fmt::format("Dashboard: http://{}:{}/?token={}", shown, options.config.dashboard_port, token);
  } else {
    head->dashboard_note = "Dashboard: not started: " + dashboard.message();
    LOG_WARN("{}", head->dashboard_note);
    head->dashboard.reset();
  }
  return Status::Ok();
}

void StopHead(Head* head) {
  if (head->dashboard) head->dashboard->Stop();
  // Before the agents' streams close: their ends are the head's, not theirs.
  if (head->core && head->loop.running()) {
    head->loop.Call<bool>([core = head->core.get()] {
      core->Stopping();
      return true;
    });
  }
  if (head->agent_wire) head->agent_wire->Stop();
  if (head->grpc_port) head->grpc_port->Stop();
  // Calls under way get half a second to finish; clusterctl treats a call
  // cut short as a head that went away and tries again.
  if (head->server) head->server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  if (head->timer) head->loop.Post([timer = head->timer.get()] { timer->Cancel(); });
  head->loop.Stop();
  // After the loop: no more output comes; what is buffered goes to S3.
  if (head->log_mirror) head->log_mirror->Stop();
}

// A head in HA (--ha): stands by until it leads; each term as leader is a
// Head of its own, started when leadership is won, its state read then from
// etcd (etcd_state_stores.h), and stopped at once when it is lost.
struct HaHead {
  std::mutex mutex;
  std::unique_ptr<Head> term;  // while this head leads
  std::unique_ptr<HeadLeadership> leadership;
};

Status StartHaHead(const DaemonOptions& options, const std::string& token, const std::string& address, HaHead* ha) {
  auto lock = LockStateFolder(options.state_dir, std::chrono::seconds(5));
  if (!lock.ok()) return lock.status();
  HeadLeadershipOptions leadership;
  RETURN_IF_ERROR(ParseEtcdEndpoints(options.ha, &leadership.endpoints).WithContext("--ha"));
  leadership.tls = EtcdTls{options.ha_ca, options.ha_cert, options.ha_key};
  leadership.id = options.node_name.empty() ? address : options.node_name;
  leadership.address = address;
  leadership.lease_ttl_ms = options.config.ha_lease_ttl_ms;
  leadership.step_down_margin_ms = options.config.ha_step_down_margin_ms;
  leadership.call_timeout_ms = options.config.ha_etcd_call_timeout_ms;
  leadership.standby.bind_ip = IsLoopbackAddress(options.node_ip) ? options.node_ip : "0.0.0.0";
  leadership.standby.port = options.config.port;
  leadership.standby.cert_pem = options.tls.cert_pem;
  leadership.standby.key_pem = options.tls.key_pem;
  leadership.dashboard_host = options.dashboard_host;
  leadership.dashboard_port = options.config.dashboard_port;
  leadership.dashboard_url = fmt::format(
      "http://{}:{}", options.dashboard_host == "0.0.0.0" ? options.node_ip : options.dashboard_host,
      options.config.dashboard_port);
  leadership.lead = [&options, token, address, ha](const LeaderTerm& leader) -> Status {
    auto term = std::make_unique<Head>();
    term->state_folder_locked = true;
    Status started = StartHead(options, token, address, term.get(), &leader);
    if (!started.ok()) {
      StopHead(term.get());
      return started;
    }
    std::lock_guard<std::mutex> lock(ha->mutex);
    ha->term = std::move(term);
    return Status::Ok();
  };
  leadership.stop_leading = [ha] {
    std::unique_ptr<Head> term;
    {
      std::lock_guard<std::mutex> lock(ha->mutex);
      term = std::move(ha->term);
    }
    if (term) StopHead(term.get());
  };
  ASSIGN_OR_RETURN(ha->leadership, HeadLeadership::Start(std::move(leadership)));
  return Status::Ok();
}

// Whether two head addresses name the same head: the same port, and the
// same host or two addresses of this machine (a head that advertises
// 10.0.0.1 is joined as 127.0.0.1 from its own machine).
bool SameHead(const std::string& a, const std::string& b) {
  if (a == b) return true;
  auto first = ParseHostPort(a), second = ParseHostPort(b);
  if (!first.ok() || !second.ok() || first->port != second->port) return false;
  std::vector<std::string> mine = LocalAddresses();
  auto local = [&](const std::string& host) {
    return IsLoopbackAddress(host) || std::find(mine.begin(), mine.end(), host) != mine.end();
  };
  return local(first->host) && local(second->host);
}

// A worker joins the session of a head on this machine when there is one,
// so that `clusterd stop` and the logs find everything in one place; else
// it makes its own, which becomes session_latest only once it has joined.
// Its own session keeps the head's address and the token (0600), so that
// clusterctl on this machine finds the cluster as it does on the head's.
Result<Session> WorkerSession(const std::string& temp_dir, const std::string& head_address, const std::string& token,
                              const TlsConfig& tls, bool* created) {
  *created = false;
  auto latest = LatestSession(temp_dir);
  if (latest.ok()) {
    auto address = ReadFileTrimmed(latest->AddressFile());
    if (address.ok() && SameHead(*address, head_address)) return latest;
  }
  ASSIGN_OR_RETURN(Session session, CreateSession(temp_dir, /*make_latest=*/false));
  *created = true;
  RETURN_IF_ERROR(WriteFileAtomic(session.AddressFile(), head_address + "\n"));
  RETURN_IF_ERROR(WriteFileAtomic(session.TokenFile(), token + "\n", 0600));
  if (tls.on()) RETURN_IF_ERROR(WriteFileAtomic(session.TlsCaFile(), tls.ca_path + "\n"));
  return session;
}

}  // namespace

// The banner's line for an HA head, in place of the dashboard's (only the
// leader serves one).
std::string HaNote(const DaemonOptions& options, const HeadLeadership& leadership) {
  const LeadershipState state = leadership.State();
  std::string now = leadership.serving() ? "leads now"
                    : state.leader.address.empty() ? "stands by (no leader yet)"
                                                   : "stands by; the leader is at " + state.leader.address;
  return fmt::format("HA: one of the heads electing a leader in {}: this head {}. Give clients and workers every "
                     "head: --address H1:{},H2:{}",
                     options.ha, now, options.config.port, options.config.port);
}

int RunDaemon(const DaemonOptions& options, const StartReport& report) {
  const std::string role = options.head ? "head" : "worker";
  Head head;
  HaHead ha;
  std::string token = options.token;
  std::string head_address = options.head_address;
  Session session;
  const int64_t open_files = RaiseOpenFileLimit();

  if (options.head) {
    auto head_token = HeadToken(options.state_dir, options.token_file);
    if (!head_token.ok()) {
      report.failed(head_token.status());
      return 1;
    }
    token = *head_token;
    head_address = fmt::format("{}:{}", options.node_ip, options.config.port);
    Status started = options.ha.empty() ? StartHead(options, token, head_address, &head)
                                        : StartHaHead(options, token, head_address, &ha);
    if (!started.ok()) {
      if (ha.leadership) ha.leadership->Stop();
      report.failed(started);
      return 1;
    }
    // Only now, with the port ours, does the new session replace the old one.
    auto created = CreateSession(options.temp_dir);
    if (!created.ok()) {
      if (ha.leadership) ha.leadership->Stop();
      StopHead(&head);
      report.failed(created.status());
      return 1;
    }
    session = *created;
    Status wrote = WriteFileAtomic(session.AddressFile(), head_address + "\n");
    if (wrote.ok()) wrote = WriteFileAtomic(session.TokenFile(), token + "\n", 0600);
    if (wrote.ok() && options.tls.on()) wrote = WriteFileAtomic(session.TlsCaFile(), options.tls.ca_path + "\n");
    if (!wrote.ok()) {
      if (ha.leadership) ha.leadership->Stop();
      StopHead(&head);
      report.failed(wrote);
      return 1;
    }
  }

  bool created_session = false;
  if (!options.head) {
    auto joined = WorkerSession(options.temp_dir, head_address, token, options.tls, &created_session);
    if (!joined.ok()) {
      report.failed(joined.status());
      return 1;
    }
    session = *joined;
  }

  // Recorded before any node joins: without it `clusterd stop` cannot find
  // this daemon, and a worker on a full disk would say it joined and then
  // could not be stopped.
  const std::string pid_file = fmt::format("{}/{}-{}.pid", session.PidsDir(), role, getpid());
  if (Status recorded = WriteFileAtomic(pid_file, ProcessRecord::Of(getpid()).Format() + "\n"); !recorded.ok()) {
    StopHead(&head);
    if (created_session) RemoveSession(session);
    if (ha.leadership) ha.leadership->Stop();
    report.failed(recorded.WithContext("cannot record this daemon for clusterd stop"));
    return 1;
  }

  std::unique_ptr<NodeAgent> agent;
  bool runs_agent = !options.head || options.num_cpus != 0 || options.num_gpus != 0;
  if (runs_agent) {
    NodeAgentOptions agent_options;
    agent_options.head_address = options.head ? fmt::format("{}:{}", IsLoopbackAddress(options.node_ip) ? options.node_ip : "127.0.0.1", options.config.port)
                                              : head_address;
    agent_options.token = token;
    agent_options.tls = options.tls;
    // The head's own agent dials it on loopback; its certificate names the
    // address the others dial.
    if (options.head && options.tls.on()) agent_options.tls.target_name_override = options.node_ip;
    agent_options.node_name = options.node_name;
    agent_options.node_ip = options.node_ip;
    agent_options.num_cpus = options.num_cpus;
    agent_options.num_gpus = options.num_gpus;
    agent_options.memory_bytes = options.memory_bytes;
    agent_options.custom = options.custom;
    agent_options.is_head = options.head;
    // Heads in HA may start in any order, and with their workers: a node
    // waits for one of them to lead (ha_leader_wait_ms), saying so.
    agent_options.heads_in_ha = !options.ha.empty() || head_address.find(',') != std::string::npos;
    if (report.progress) {
      std::string heads = options.head ? "the heads electing in " + options.ha : head_address;
      if (!options.head) boost::replace_all(heads, ",", ", ");
      agent_options.on_waiting_for_leader = [&report, &options, heads](const std::string& why) {
        report.progress(fmt::format("waiting up to {:g} s (ha_leader_wait_ms) for a leader among {}: {}",
                                    options.config.ha_leader_wait_ms / 1000.0, heads, why));
      };
    }
    agent_options.config = options.config;
    agent_options.session_dir = session.dir;
    agent_options.socket_path = fmt::format("{}/agent-{}.sock", options.temp_dir, getpid());
    agent_options.python_path = ClusterdPythonPath();
    agent_options.package_dir = options.temp_dir + "/packages";
    agent_options.work_dir = fmt::format("{}/work/{}", options.temp_dir, getpid());
    agent_options.hash_dir = options.temp_dir + "/hashes";
    agent = std::make_unique<NodeAgent>(agent_options, [](const std::string&) { kill(getpid(), SIGTERM); });
    // The head's own agent registers through the head's loop: its
    // register_timeout_ms start once the loop has run what the start queued
    // (the first Tick after a long journal's replay), so that a slow start is
    // not taken for an agent that cannot register, and the head does not
    // stop itself.
    if (options.head && head.loop.running()) head.loop.Call<bool>([] { return true; });
    auto registered = agent->Start(options.config.register_timeout_ms);
    if (!registered.ok()) {
      agent.reset();
      if (ha.leadership) ha.leadership->Stop();
      StopHead(&head);
      unlink(pid_file.c_str());
      if (created_session) RemoveSession(session);
      report.failed(registered.status());
      return 1;
    }
  }
  // Only a worker that joined moves session_latest, so a failed join
  // leaves it where it was.
  if (created_session) MakeLatest(options.temp_dir, session);
  std::string log_path = fmt::format("{}/{}-{}.log", session.LogsDir(), role, getpid());
  if (report.redirect_logs) report.redirect_logs(log_path);
  LOG_INFO("clusterd {} running, pid {}, session {}, open files up to {}", role, getpid(), session.dir,
           open_files < 0 ? std::string("unlimited") : std::to_string(open_files));


  // The commands it prints must reach this cluster when typed as printed:
  // with the --temp-dir it was started with, where that is not the default.
  const std::string temp_flag =
      options.temp_dir == DefaultTempDir() ? "" : " --temp-dir " + options.temp_dir;
  std::string message;
  if (options.head) {
    message = fmt::format(
        "clusterd head started at {} (session {}).\n{}\n{}\n{}"
        "To add a worker node, run on it{}:\n"
        "  CLUSTER_TOKEN={} clusterd start --address={}{}\n"
        "To see the cluster:\n"
        "  clusterctl status{}\n"
        "To stop this machine's daemons:\n"
        "  clusterd stop{}",
        head_address, session.dir, ha.leadership ? HaNote(options, *ha.leadership) : head.dashboard_note, head.agent_port_note,
        head.heartbeat_note.empty() ? "" : head.heartbeat_note + "\n",
        options.tls.on() ? fmt::format(" (with a copy of the CA certificate {})", options.tls.ca_path) : "", token,
        head_address, options.tls.on() ? " --tls-ca " + options.tls.ca_path : "", temp_flag, temp_flag);
  } else {
    message = fmt::format("clusterd worker joined the head at {} (session {}).\nTo stop it: clusterd stop{}",
                          head_address, session.dir, temp_flag);
  }
  report.ready(message);

  StopRequest stop = WaitForStopSignal();
  LOG_INFO("clusterd {} stopping (signal {}{})", role, stop.signal_number,
           stop.grace_ms ? fmt::format(", ranks' grace period {} ms", *stop.grace_ms) : "");
  if (agent) agent->Stop(stop.grace_ms);
  if (ha.leadership) ha.leadership->Stop();
  StopHead(&head);
  unlink(pid_file.c_str());
  LOG_INFO("clusterd {} stopped", role);
  return 0;
}

}  // namespace clusterd
