// The session folder a daemon writes and clusterctl reads:
//   <temp-dir>/session_<stamp>_<pid>/{address, token (0600), pids/, logs/, jobs/}
//   <temp-dir>/session_latest -> the newest one
// and the lookups of head address and cluster token that use it.
#pragma once

#include <string>
#include <vector>

#include "common/file_util.h"  // the session's files are read and written with these
#include "common/status.h"

namespace clusterd {

// Where session folders go: $CLUSTER_TEMP_DIR, else /tmp/clusterd-<uid>
// (a per-user folder, checked private before use).
std::string DefaultTempDir();

// Where a head keeps what must survive a reboot (token, journal, store,
// the jobs' logs): $XDG_STATE_HOME/clusterd, else /var/lib/clusterd for
// root (a system install), else ~/.local/state/clusterd.
std::string DefaultStateDir();

struct Session {
  std::string dir;
  std::string AddressFile() const { return dir + "/address"; }
  std::string TokenFile() const { return dir + "/token"; }
  // The path of the CA that verifies the head, when the cluster uses TLS (never a key).
  std::string TlsCaFile() const { return dir + "/tls_ca"; }
  std::string PidsDir() const { return dir + "/pids"; }
  std::string LogsDir() const { return dir + "/logs"; }
  std::string JobsDir() const { return dir + "/jobs"; }
  std::string StateDir() const { return dir + "/state"; }
};

// Makes a new session folder with its subfolders and (by default) points session_latest at it.
Result<Session> CreateSession(const std::string& temp_dir, bool make_latest = true);
Status MakeLatest(const std::string& temp_dir, const Session& session);
// Deletes a session folder that was never used (a failed start).
void RemoveSession(const Session& session);
// The folder session_latest points at, if any.
Result<Session> LatestSession(const std::string& temp_dir);
// Every session folder under temp_dir (for `clusterd stop`).
std::vector<Session> AllSessions(const std::string& temp_dir);

// Address: --address, then $CLUSTER_ADDRESS, then the latest session's file.
Result<std::string> ResolveHeadAddress(const std::string& flag, const std::string& temp_dir);
// Token: --token, then $CLUSTER_TOKEN, then the latest session's token file.
Result<std::string> ResolveToken(const std::string& flag, const std::string& temp_dir);

// 32 hex characters from getrandom(); aborts when the kernel has none to give.
std::string NewToken();
// The CA that verifies the head: --tls-ca, then $CLUSTER_TLS_CA, then the
// latest session's tls_ca file; empty when none says TLS (plaintext).
std::string ResolveTlsCa(const std::string& flag, const std::string& temp_dir);

struct HostPort {
  std::string host;
  int port = 0;
  std::string ToString() const;
};
// "host:port" with a port in 1..65535; "[v6]:port" gives the host without
// its brackets, and ToString puts them back.
Result<HostPort> ParseHostPort(const std::string& address);

}  // namespace clusterd
