// clusterctl user add|list|remove|set, token create|list|revoke, whoami:
// the head's users and node tokens (docs/SHARING.md, "Users and tokens").
// All but whoami are an admin's; a new token is printed once, here.
#pragma once

#include <string>
#include <vector>

namespace clusterd::cli {

int UserCommand(const std::vector<std::string>& args);
int TokenCommand(const std::vector<std::string>& args);
int WhoAmICommand(const std::vector<std::string>& args);

}  // namespace clusterd::cli
