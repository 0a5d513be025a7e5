#include "daemon/start_command.h"

#include "common/storage/s3_config.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "common/config.h"
#include "common/file_util.h"
#include "common/jobspec/job_spec_checks.h"
#include "common/net/leader_redirect.h"
#include "common/net/net_address.h"
#include "common/resources.h"
#include "common/session.h"
#include "daemon/daemon.h"
#include "daemon/ha/etcd_endpoints.h"
#include "daemon/head/queue_policy/queue_policy.h"
#include "daemon/head/usage_history.h"
#include "daemon/running_daemons.h"
#include "daemon/stop_signals.h"

namespace po = boost::program_options;

namespace clusterd {

namespace {

// The early log's lines, then, once the log file exists, nothing more: the
// daemon's stderr moves to the log file right after.
void CopyEarlyLog(int early_fd, int log_fd) {
  char buffer[8192];
  ssize_t got = 0;
  if (lseek(early_fd, 0, SEEK_SET) != 0) return;
  while ((got = read(early_fd, buffer, sizeof buffer)) > 0) {
    if (write(log_fd, buffer, static_cast<size_t>(got)) != got) return;
  }
}

std::string FlagName(std::string name) {
  for (char& c : name) c = c == '_' ? '-' : c;
  return name;
}

struct TlsFlags {
  std::string cert, key, ca;
};

po::options_description StartFlags(DaemonOptions* o, std::string* resources, std::string* address,
                                   TlsFlags* tls, std::vector<std::string>* priority_classes) {
  po::options_description flags("clusterd start [--head | --address HOST:PORT] [flags]");
  flags.add_options()
    ("help,h", "print this help")
    ("head", po::bool_switch(&o->head), "start the head of a new cluster on this machine")
    ("address", po::value(address), "HOST:PORT of the head to join as a worker; heads in HA: every head, "
     "HOST:PORT,HOST:PORT (the worker follows whichever leads)")
    ("dashboard-host", po::value(&o->dashboard_host)->default_value(o->dashboard_host),
     "head: address the dashboard listens on (0.0.0.0: every interface)")
    ("num-cpus", po::value(&o->num_cpus), "CPUs this node offers (default: the affinity mask)")
    ("num-gpus", po::value(&o->num_gpus), "GPUs this node offers, as indexes 0..N-1 (default: nvidia-smi)")
    ("memory", po::value(&o->memory_bytes), "memory this node offers, bytes (default: MemTotal)")
    ("resources", po::value(resources), "custom resources, JSON: '{\"name\": amount}'")
    ("node-ip-address", po::value(&o->node_ip),
     "IP other nodes reach this one at (default: the head's address on the default route; a worker's "
     "local address on its route to the head)")
    ("node-name", po::value(&o->node_name), "this node's name (default: the host name)")
    ("temp-dir", po::value(&o->temp_dir)->default_value(DefaultTempDir()),
     "where session folders, sockets and caches go (private to you)")
    ("state-dir", po::value(&o->state_dir)->default_value(DefaultStateDir()),
     "head: where its token, journal, jobs' logs and store live across restarts (private to you)")
    ("store", po::value(&o->store),
     "head: where code packages, checkpoints and outputs live: s3://BUCKET/PREFIX keeps them in S3, which every "
     "machine reads and writes with its own AWS credentials (default: the head's own disk)")
    ("s3-endpoint", po::value(&o->s3_endpoint),
     "head: the S3 endpoint URL for --store s3:// (default: $AWS_ENDPOINT_URL, else AWS)")
    ("s3-part-mb", po::value(&o->s3_part_mb)->default_value(o->s3_part_mb), "head: S3 multipart part size, MiB (>= 5)")
    ("ha", po::value(&o->ha),
     "head: run as one of several heads in high availability, electing a leader in etcd: "
     "etcd://E1:2379,E2:2379,E3:2379[/prefix] (docs/HA.md); needs --store s3://")
    ("ha-cert", po::value(&o->ha_cert), "head with --ha: client certificate (PEM) for etcd members that require one")
    ("ha-key", po::value(&o->ha_key), "head with --ha: the private key of --ha-cert (PEM)")
    ("ha-ca", po::value(&o->ha_ca), "head with --ha: the CA certificate that signed the etcd members' (PEM); "
     "given, etcd is spoken over TLS")
    ("token", po::value(&o->token), "worker: the cluster token (default: $CLUSTER_TOKEN, then the session's file)")
    ("tls-cert", po::value(&tls->cert), "head: serve gRPC over TLS with this certificate (PEM; it must name the "
     "address workers and clients dial)")
    ("tls-key", po::value(&tls->key), "head: the private key of --tls-cert (PEM)")
    ("tls-ca", po::value(&tls->ca), "the CA certificate that signed the head's certificate; a worker verifies the "
     "head with it (default: $CLUSTER_TLS_CA, then the session's; a head defaults to --tls-cert)")
    ("token-file", po::value(&o->token_file),
     "a file (mode 0600) holding the cluster token; head: where to keep its token (made if absent, default "
     "<state-dir>/token); worker: where to read it")
    ("block", po::bool_switch(&o->block), "stay in the foreground");
  // Every daemon tunable of common/config_def.h is a flag: heartbeat_ms is
  // --heartbeat-ms. clusterctl's keys are not: the daemon reads none of them.
// --priority-class may also come once per class (joined with commas).
#define CLUSTERD_CONFIG(type, name, def, desc)                                                        \
  if (std::string_view(#name) == "priority_class") {                                                  \
    flags.add_options()(FlagName(#name).c_str(), po::value(priority_classes)->composing(), desc);     \
  } else {                                                                                            \
    flags.add_options()(FlagName(#name).c_str(), po::value(&o->config.name)->default_value(o->config.name), desc); \
  }
#define CLUSTERCTL_CONFIG(type, name, def, desc)
#include "common/config_def.h"
#undef CLUSTERCTL_CONFIG
#undef CLUSTERD_CONFIG
  return flags;
}

// A token file others can read hands them the cluster (ssh refuses such
// keys for the same reason). A head may be told to make one.
Status CheckTokenFile(const std::string& path, bool head) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT && head) return Status::Ok();
    return Status::InvalidArgument(fmt::format("--token-file {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(info.st_mode)) return Status::InvalidArgument(fmt::format("--token-file {} is not a file", path));
  if (info.st_mode & 077) {
    return Status::InvalidArgument(fmt::format(
        "--token-file {} can be read by other users (mode {:04o}): chmod 600 it", path, info.st_mode & 07777));
  }
  return Status::Ok();
}

// HA heads share nothing but etcd and S3: a blob kept on one head's disk
// would be gone with its machine.
Status ValidateHa(const DaemonOptions& o) {
  if (o.ha.empty()) {
    if (!o.ha_cert.empty() || !o.ha_key.empty() || !o.ha_ca.empty()) {
      return Status::InvalidArgument("--ha-cert, --ha-key and --ha-ca go with --ha etcd://...");
    }
    return Status::Ok();
  }
  if (!o.head) return Status::InvalidArgument("--ha is the head's: a worker is given every head with --address H1,H2");
  EtcdEndpoints endpoints;
  RETURN_IF_ERROR(ParseEtcdEndpoints(o.ha, &endpoints).WithContext("--ha"));
  if (o.store.empty() || o.store.rfind("s3://", 0) != 0) {
    return Status::InvalidArgument(
        "--ha needs --store s3://BUCKET/PREFIX: packages, checkpoints and outputs must outlive a head's machine, "
        "and every head must read them (the head's own disk is this machine's alone)");
  }
  if (o.ha_cert.empty() != o.ha_key.empty()) {
    return Status::InvalidArgument("give --ha-cert and --ha-key together (the client certificate and its key)");
  }
  if (!o.ha_cert.empty() && o.ha_ca.empty()) {
    return Status::InvalidArgument("--ha-cert needs --ha-ca: the CA that signed the etcd members' certificates");
  }
  return Status::Ok();
}

Status Validate(DaemonOptions* o, const std::string& resources, const std::string& address, const TlsFlags& tls) {
  if (o->head == !address.empty()) {
    return Status::InvalidArgument("give exactly one of --head (start a cluster) or --address HOST:PORT (join one)");
  }
  for (auto [name, value] : {std::pair{"--num-cpus", o->num_cpus}, std::pair{"--num-gpus", o->num_gpus},
                             std::pair{"--memory", o->memory_bytes}}) {
    if (value < 0 && value != -1) return Status::InvalidArgument(fmt::format("{} must be >= 0, got {}", name, value));
  }
  if (o->num_gpus > 0 && o->num_gpus != static_cast<int>(o->num_gpus)) {
    return Status::InvalidArgument("--num-gpus must be a whole number");
  }
  // A node's name shows in tables, log lines and file names, as a job's does.
  if (!o->node_name.empty()) {
    RETURN_IF_ERROR(job_spec_internal::CheckName(o->node_name).WithContext("--node-name"));
  }
  const Config& config = o->config;
  // priority_class, fair_share_half_life_s, backfill_max_jobs: refused here, not at the first submit.
  if (o->head) RETURN_IF_ERROR(QueuePolicySettings::FromConfig(config).status());
  if (o->head) RETURN_IF_ERROR(UsageHistorySettings::FromConfig(config).status());
  if (config.port < 1 || config.port > 65535) {
    return Status::InvalidArgument(fmt::format("--port {} is not in 1..65535", config.port));
  }
  if (config.agent_port < -1 || config.agent_port > 65535) {
    return Status::InvalidArgument(fmt::format("--agent-port {} is not in 0..65535", config.agent_port));
  }
  if (config.heartbeat_ms <= 0) return Status::InvalidArgument("--heartbeat-ms must be > 0");
  if (config.register_timeout_ms <= 0) return Status::InvalidArgument("--register-timeout-ms must be > 0");
  if (config.ha_leader_wait_ms < 0) {
    return Status::InvalidArgument(fmt::format("--ha-leader-wait-ms must be >= 0 (0: no wait), got {}",
                                               config.ha_leader_wait_ms));
  }
  if (config.node_timeout_ms <= config.heartbeat_ms) {
    return Status::InvalidArgument("--node-timeout-ms must be larger than --heartbeat-ms");
  }
  if (!o->store.empty()) {
    if (!o->head) return Status::InvalidArgument("--store is the head's: workers learn it from the head");
    RETURN_IF_ERROR(ParseS3Location(o->store).status().WithContext("--store"));
  }
  RETURN_IF_ERROR(ValidateHa(*o));
  if (o->s3_part_mb < 5) return Status::InvalidArgument(fmt::format("--s3-part-mb must be >= 5 (S3's least part), got {}", o->s3_part_mb));
  if (!resources.empty()) {
    ASSIGN_OR_RETURN(o->custom, ParseResourcesJson(resources));
    // What the head would refuse at registration, said before starting.
    for (const auto& [name, amount] : o->custom.amounts()) {
      RETURN_IF_ERROR(job_spec_internal::CheckResourceName(name).WithContext("--resources"));
      RETURN_IF_ERROR(job_spec_internal::CheckResourceAmount(name, amount).WithContext("--resources " + name));
    }
  }
  if (!o->head && (!tls.cert.empty() || !tls.key.empty())) {
    return Status::InvalidArgument(
        "--tls-cert and --tls-key are the head's: a worker verifies the head with --tls-ca alone");
  }
  std::string ca = o->head ? tls.ca : ResolveTlsCa(tls.ca, o->temp_dir);
  ASSIGN_OR_RETURN(o->tls, LoadTls(tls.cert, tls.key, ca));
  if (!o->token.empty() && !o->token_file.empty()) {
    return Status::InvalidArgument("give --token or --token-file, not both");
  }
  if (!o->token_file.empty()) RETURN_IF_ERROR(CheckTokenFile(o->token_file, o->head));
  if (!address.empty()) {
    // Several heads in HA: the agent follows whichever leads.
    ASSIGN_OR_RETURN(std::vector<std::string> heads, ParseHeadAddresses(address));
    ASSIGN_OR_RETURN(HostPort parsed, ParseHostPort(heads.front()));
    o->head_address = fmt::format("{}", fmt::join(heads, ","));
    if (!o->token_file.empty()) {
      auto token = ReadFileTrimmed(o->token_file);
      if (!token.ok()) return token.status().WithContext("--token-file " + o->token_file);
      if (token->empty()) return Status::InvalidArgument("--token-file " + o->token_file + " is empty");
      o->token = *token;
    }
    ASSIGN_OR_RETURN(o->token, ResolveToken(o->token, o->temp_dir));
    // What this machine's connection to the head starts from is what the
    // head and the other nodes can reach it at.
    if (o->node_ip.empty()) {
      auto local = LocalAddressToward(parsed.host, parsed.port);
      if (!local.ok()) return local.status().WithContext("--address " + address);
      o->node_ip = *local;
    }
  }
  if (o->head && o->node_ip.empty()) {
    ASSIGN_OR_RETURN(o->node_ip, PrimaryAddress());
  }
  return Status::Ok();
}

void BlockStopSignals() {
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// Foreground: report on the terminal, log to stderr.
int RunBlocking(const DaemonOptions& options) {
  StartReport report;
  report.ready = [](const std::string& message) {
    std::cout << message << std::endl;
    // Under systemd (Type=notify) the unit is started only now: the port is
    // bound and this node registered. Outside systemd this does nothing.
    sd_notify(0, "READY=1\nSTATUS=running");
  };
  report.failed = [](const Status& failure) { std::cerr << "clusterd start: " << failure.message() << std::endl; };
  report.progress = [](const std::string& message) {
    std::cerr << "clusterd start: " << message << std::endl;
    sd_notify(0, ("STATUS=" + message).c_str());
  };
  BlockStopSignals();
  return RunDaemon(options, report);
}

// Background: the child runs the daemon and writes one line to a pipe when
// it is up ("0 message") or has failed ("1 message"); the parent prints it
// and exits with the matching code. Before it, the child may write words on
// what it waits for ("2 message\n" each), which the parent prints as they
// come. Forked before any thread exists.
int RunDaemonized(const DaemonOptions& options) {
  int pipe_fds[2];
  // Close-on-exec: a rank the daemon starts before it reports `ready` (a
  // restarted head relaunching its jobs) must not hold the pipe open, or
  // this command never sees the end of the report and hangs.
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    std::perror("clusterd start: pipe");
    return 1;
  }
  pid_t child = fork();
  if (child < 0) {
    std::perror("clusterd start: fork");
    return 1;
  }
  if (child == 0) {
    close(pipe_fds[0]);
    setsid();
    int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    // What is logged before the session's log file exists (the journal's
    // replay, the head's start) waits in an anonymous file and goes into
    // the log first; /dev/null lost it.
    int early_fd = memfd_create("clusterd-early-log", MFD_CLOEXEC);
    dup2(early_fd >= 0 ? early_fd : null_fd, STDERR_FILENO);
    close(null_fd);
    int report_fd = pipe_fds[1];
    auto send = [report_fd](char code, const std::string& message) {
      std::string line = std::string(1, code) + message;
      ssize_t written = write(report_fd, line.data(), line.size());
      (void)written;
      close(report_fd);
    };
    StartReport report;
    report.ready = [send](const std::string& message) { send('0', message); };
    report.failed = [send](const Status& failure) { send('1', failure.message()); };
    report.progress = [report_fd](std::string message) {
      std::replace(message.begin(), message.end(), '\n', ' ');
      const std::string line = "2" + message + "\n";
      ssize_t written = write(report_fd, line.data(), line.size());
      (void)written;
    };
    report.redirect_logs = [early_fd](const std::string& path) {
      int log_fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (log_fd >= 0) {
        if (early_fd >= 0) CopyEarlyLog(early_fd, log_fd);
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        close(log_fd);
      }
      if (early_fd >= 0) close(early_fd);
    };
    BlockStopSignals();
    _exit(RunDaemon(options, report));
  }
  close(pipe_fds[1]);
  std::string reply;
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0) {
    reply.append(buffer, static_cast<size_t>(n));
    // Words on what the start waits for, shown while it waits.
    size_t end = 0;
    while (!reply.empty() && reply[0] == '2' && (end = reply.find('\n')) != std::string::npos) {
      std::cerr << "clusterd start: " << reply.substr(1, end - 1) << std::endl;
      reply.erase(0, end + 1);
    }
  }
  close(pipe_fds[0]);
  if (reply.empty()) {
    int status = 0;
    waitpid(child, &status, 0);
    std::cerr << "clusterd start: the daemon exited during start (status " << status
              << "); see the logs under " << options.temp_dir << std::endl;
    return 1;
  }
  if (reply[0] != '0') {
    waitpid(child, nullptr, 0);
    std::cerr << "clusterd start: " << reply.substr(1) << std::endl;
    return 1;
  }
  std::cout << reply.substr(1) << std::endl;
  return 0;
}

}  // namespace

int StartCommand(const std::vector<std::string>& args) {
  DaemonOptions options;
  std::string resources, address;
  TlsFlags tls;
  std::vector<std::string> priority_classes;
  po::options_description flags = StartFlags(&options, &resources, &address, &tls, &priority_classes);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(flags).run(), vm);
    po::notify(vm);
    options.config.priority_class = fmt::format("{}", fmt::join(priority_classes, ","));
  } catch (const po::error& e) {
    std::cerr << "clusterd start: " << e.what() << " (see clusterd start --help)" << std::endl;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << flags;
    return 0;
  }
  Status valid = Validate(&options, resources, address, tls);
  if (!valid.ok()) {
    std::cerr << "clusterd start: " << valid.message() << std::endl;
    return 2;
  }
  // The join command run twice (by hand and by its unit, say) would offer
  // this machine's CPUs, memory and GPUs a second time, as node "<host>-2".
  // Several nodes on one machine (the quick start, tests) name themselves.
  if (!options.head && options.node_name.empty()) {
    const std::vector<RunningDaemon> running = FindRunningDaemons(options.temp_dir);
    if (!running.empty()) {
      std::cerr << fmt::format("clusterd start: a clusterd {} (pid {}) already runs on this machine under {} and "
                               "offers its resources: `clusterd stop` first, or give --node-name to run another "
                               "node beside it", running.front().role, running.front().pid, options.temp_dir)
                << std::endl;
      return 1;
    }
  }
  return options.block ? RunBlocking(options) : RunDaemonized(options);
}

}  // namespace clusterd
