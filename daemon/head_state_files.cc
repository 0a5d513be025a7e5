#include "daemon/head_state_files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "common/net/auth.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "common/session.h"

namespace clusterd {

namespace {

// A state folder or token file made, or loosened, by hand before this head
// ran: what only this user may read (the token, the journal, the jobs' code,
// logs and checkpoints) is made so again, and said.
void TightenIfLoose(const std::string& path, mode_t allowed) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return;
  const mode_t mode = st.st_mode & 07777;
  if ((mode & ~allowed) == 0) return;
  if (chmod(path.c_str(), mode & allowed) != 0) {
    LOG_WARN("{} may be read by others (mode {:o}) and could not be made {:o}: {}", path, mode, mode & allowed,
             std::strerror(errno));
    return;
  }
  LOG_WARN("{} could be read by others (mode {:o}): made {:o}", path, mode, mode & allowed);
}

}  // namespace

// The head's state outlives one run of the head, and a reboot, in its
// --state-dir: the token (so node agents can reconnect to a restarted
// head), the journal, the jobs' logs and the blob store (so a restarted head
// forgets nothing). Private to the user the head runs as.
// --token-file puts it elsewhere (a packaged install keeps it where the
// operator copies it from).
Result<std::string> HeadToken(const std::string& state_dir, const std::string& token_file) {
  RETURN_IF_ERROR(EnsurePrivateDir(state_dir));
  TightenIfLoose(state_dir, 0700);
  std::string path = token_file.empty() ? state_dir + "/token" : token_file;
  auto existing = ReadFileTrimmed(path);
  if (existing.ok() && !existing->empty()) {
    RETURN_IF_ERROR(CheckTokenText(*existing).WithContext("token file " + path));
    TightenIfLoose(path, 0600);
    return existing;
  }
  std::string token = NewToken();
  RETURN_IF_ERROR(WriteFileAtomic(path, token + "\n", 0600));
  return token;
}

// Six hex digits made once per state folder and kept in it: part of every
// job id, so ids never repeat across heads (or a head that lost its state).
Result<std::string> ClusterId(const std::string& state_dir) {
  std::string path = state_dir + "/cluster_id";
  auto existing = ReadFileTrimmed(path);
  if (existing.ok() && !existing->empty()) return existing;
  std::string id = NewToken().substr(0, 6);
  RETURN_IF_ERROR(WriteFileAtomic(path, id + "\n", 0600));
  return id;
}

}  // namespace clusterd
