// The user a job's ranks run as (the job file's run_as, else the node's
// run_as config): found on this node, checked against the node's
// allowed_run_as, and given the folders the ranks must write. Used by the
// launcher's keeper process, single-threaded, before it starts the ranks.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

struct RunAsUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary, as initgroups would set them
  std::string home;
};

// The rule (docs/SECURITY.md): a user the node's own run_as names is taken
// as is; one a job file names (asked_by_job) must be allowed by `allowed`,
// "*" for any user of the node but root (uid 0), else a comma-separated
// list of names (root only when listed). Switching needs this process to
// run as root, unless the user is its own. NotFound when the node has no
// such user; FailedPrecondition when the rule or this process refuses it.
Result<RunAsUser> ResolveRunAs(const std::string& name, bool asked_by_job, const std::string& allowed);

// Makes `dir` and everything below it the user's (not following links).
Status GiveTree(const std::string& dir, const RunAsUser& user);

// Lets others pass through (o+x, not read) each folder above `path` that
// this process owns and keeps closed (the daemon's private runtime
// folder): else the user could not reach its working folder there.
void LetPassTo(const std::string& path);

// The environment's HOME, USER and LOGNAME set to the user's.
void SetUserEnvironment(const RunAsUser& user, std::vector<std::string>* env);

}  // namespace clusterd
