// The head's own files in its --state-dir that name the cluster: the token
// node agents and clients present, and the cluster id every job id carries.
// Made at the first start, kept after; the folder and the token are made
// private again if they were loosened by hand.
#pragma once

#include <string>

#include "common/status.h"

namespace clusterd {

// The cluster token: read from `token_file` (else <state_dir>/token), or
// made there (0600) at the first start.
Result<std::string> HeadToken(const std::string& state_dir, const std::string& token_file);

// Six hex digits made once per state folder and kept in it.
Result<std::string> ClusterId(const std::string& state_dir);

}  // namespace clusterd
