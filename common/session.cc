#include "common/session.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdio>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace clusterd {

namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

}  // namespace

std::string DefaultTempDir() { return EnvOr("CLUSTER_TEMP_DIR", fmt::format("/tmp/clusterd-{}", geteuid())); }

std::string DefaultStateDir() {
  std::string xdg = EnvOr("XDG_STATE_HOME", "");
  if (!xdg.empty()) return xdg + "/clusterd";
  if (geteuid() == 0) return "/var/lib/clusterd";
  return EnvOr("HOME", "/tmp") + "/.local/state/clusterd";
}

Result<Session> CreateSession(const std::string& temp_dir, bool make_latest) {
  RETURN_IF_ERROR(EnsurePrivateDir(temp_dir));
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", &tm);
  std::string name = fmt::format("session_{}_{}", stamp, getpid());
  Session session{temp_dir + "/" + name};
  for (const auto& dir : {session.dir, session.PidsDir(), session.LogsDir(), session.JobsDir(),
                          session.StateDir()}) {
    RETURN_IF_ERROR(MakeDirs(dir));
  }
  if (make_latest) RETURN_IF_ERROR(MakeLatest(temp_dir, session));
  return session;
}

Status MakeLatest(const std::string& temp_dir, const Session& session) {
  // Atomically: a reader sees the old or the new one.
  std::string name = session.dir.substr(session.dir.rfind('/') + 1);
  std::string link = temp_dir + "/session_latest";
  std::string tmp_link = link + fmt::format(".tmp{}", getpid());
  unlink(tmp_link.c_str());
  if (symlink(name.c_str(), tmp_link.c_str()) != 0 || rename(tmp_link.c_str(), link.c_str()) != 0) {
    return Status::IOError(fmt::format("cannot update {}: {}", link, std::strerror(errno)));
  }
  return Status::Ok();
}

void RemoveSession(const Session& session) {
  // Only what CreateSession and an agent's start made, all empty but the address and token files.
  unlink(session.AddressFile().c_str());
  unlink(session.TokenFile().c_str());
  for (const auto& dir : {session.PidsDir(), session.LogsDir() + "/jobs", session.LogsDir(), session.JobsDir(),
                          session.StateDir(), session.dir + "/ranks"}) {
    rmdir(dir.c_str());
  }
  rmdir(session.dir.c_str());
}

Result<Session> LatestSession(const std::string& temp_dir) {
  // A session in a folder someone else could write would hand us their
  // address and token: refuse to read one there.
  struct stat folder {};
  if (lstat(temp_dir.c_str(), &folder) == 0) RETURN_IF_ERROR(EnsurePrivateDir(temp_dir));
  std::string link = temp_dir + "/session_latest";
  char target[4096];
  ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return Status::NotFound(fmt::format("no session in {}", temp_dir));
  target[n] = '\0';
  std::string dir = target[0] == '/' ? std::string(target) : temp_dir + "/" + target;
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return Status::NotFound(fmt::format("no session in {}", temp_dir));
  return Session{dir};
}

std::vector<Session> AllSessions(const std::string& temp_dir) {
  std::vector<Session> out;
  DIR* dir = opendir(temp_dir.c_str());
  if (!dir) return out;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.rfind("session_", 0) == 0 && name != "session_latest" &&
        name.find(".tmp") == std::string::npos) {
      out.push_back(Session{temp_dir + "/" + name});
    }
  }
  closedir(dir);
  return out;
}

namespace {
// The flag, else the environment variable, else the latest session's file.
Result<std::string> FlagEnvOrSession(const std::string& flag, const char* env_name, const std::string& temp_dir,
                                     std::string (Session::*file)() const) {
  if (!flag.empty()) return flag;
  std::string env = EnvOr(env_name, "");
  if (!env.empty()) return env;
  auto session = LatestSession(temp_dir);
  if (!session.ok()) return session.status();
  auto value = ReadFileTrimmed(((*session).*file)());
  if (value.ok() && value->empty()) return Status::NotFound("empty file");
  return value;
}
}  // namespace

Result<std::string> ResolveHeadAddress(const std::string& flag, const std::string& temp_dir) {
  auto address = FlagEnvOrSession(flag, "CLUSTER_ADDRESS", temp_dir, &Session::AddressFile);
  if (address.ok()) return address;
  return Status::NotFound(fmt::format(
      "no head address: pass --address HOST:PORT, set CLUSTER_ADDRESS, or start a head on this "
      "machine (no session found in {})", temp_dir));
}

Result<std::string> ResolveToken(const std::string& flag, const std::string& temp_dir) {
  auto token = FlagEnvOrSession(flag, "CLUSTER_TOKEN", temp_dir, &Session::TokenFile);
  if (token.ok()) return token;
  return Status::NotFound(fmt::format(
      "no cluster token: pass --token, set CLUSTER_TOKEN, or run on the head machine "
      "(no token file found in {})", temp_dir));
}

std::string ResolveTlsCa(const std::string& flag, const std::string& temp_dir) {
  auto ca = FlagEnvOrSession(flag, "CLUSTER_TLS_CA", temp_dir, &Session::TlsCaFile);
  return ca.ok() ? *ca : "";
}

std::string NewToken() {
  unsigned char bytes[16] = {};
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    // A predictable token would let anyone in: never carry on without entropy.
    if (n <= 0) {
      std::fprintf(stderr, "clusterd: no randomness for the cluster token: %s\n", std::strerror(errno));
      std::abort();
    }
    got += static_cast<size_t>(n);
  }
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

std::string HostPort::ToString() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

Result<HostPort> ParseHostPort(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return Status::InvalidArgument(fmt::format("address '{}' is not HOST:PORT", address));
  }
  HostPort out;
  out.host = address.substr(0, colon);
  // "[::1]:6379": the brackets only keep the port apart.
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  const std::string port = address.substr(colon + 1);
  char* end = nullptr;
  long value = std::strtol(port.c_str(), &end, 10);
  if (*end != '\0' || value < 1 || value > 65535) {
    return Status::InvalidArgument(fmt::format("address '{}': port '{}' is not in 1..65535", address, port));
  }
  out.port = static_cast<int>(value);
  return out;
}

}  // namespace clusterd
