// Assembles a running daemon: a head (event loop, core, gRPC server,
// liveness timer) and/or a node agent, plus the session folder, and runs
// until SIGTERM/SIGINT or until the head asks the agent to stop.
#pragma once

#include <signal.h>

#include <functional>
#include <string>

#include "cluster.pb.h"
#include "common/config.h"
#include "common/status.h"
#include "common/net/tls.h"

namespace clusterd {

struct DaemonOptions {
  bool head = false;
  std::string head_address;   // worker: the head to join
  std::string dashboard_host = "127.0.0.1";
  double num_cpus = -1;
  double num_gpus = -1;
  double memory_bytes = -1;
  ResourceSet custom;
  std::string node_ip;        // resolved by the start command: never empty here
  std::string node_name;
  std::string temp_dir;        // session folders, sockets, caches: runtime
  std::string state_dir;       // head: what must survive a reboot
  std::string token;          // worker: resolved already
  TlsConfig tls;              // loaded already; off when no --tls-* flag was given
  std::string token_file;     // head: where its token lives (default <state_dir>/token)
  bool block = false;
  std::string store;          // head: "" (its own disk) or s3://BUCKET/PREFIX
  std::string s3_endpoint;    // head: for --store s3://; "" means AWS_ENDPOINT_URL, else AWS
  int64_t s3_part_mb = 16;    // head: multipart part size every machine uses
  std::string ha;             // head: etcd://E1:2379,...[/prefix] to run as one of several heads in HA; "": a single head
  std::string ha_cert, ha_key, ha_ca;  // head with --ha: TLS to etcd (client certificate, its key, the members' CA)
  Config config;              // the tunables, ports included (common/config_def.h)
};

// How the start command hears whether the daemon came up.
struct StartReport {
  std::function<void(const std::string& message)> ready;
  std::function<void(const Status& failure)> failed;
  // A word while the start waits (for a head to lead), before ready or
  // failed; may be null. One line.
  std::function<void(const std::string& message)> progress;
  // Called once the session folder exists, with the log file to write to.
  std::function<void(const std::string& log_path)> redirect_logs;
};

// REQUIRES: StopSignals() (stop_signals.h) blocked in the calling thread (so
// every thread made here inherits the mask and sigwait sees them).
// Returns the process's exit code.
int RunDaemon(const DaemonOptions& options, const StartReport& report);

}  // namespace clusterd
