#pragma once

#include <string>
#include <vector>

namespace clusterd {

// Who made a call: the head resolves every presented token to one of these
// before any handler runs. A node principal may register a node and nothing
// else; a user principal acts as `user`, with admin rights when `admin`.
struct Principal {
  enum class Kind { kUser, kNode };
  Kind kind = Kind::kUser;
  std::string user;  // the user's name; for a node token, the token's label
  bool admin = false;
  std::vector<std::string> groups;

  bool IsUser() const { return kind == Kind::kUser; }
  bool IsNode() const { return kind == Kind::kNode; }
  bool IsAdmin() const { return kind == Kind::kUser && admin; }
};

}  // namespace clusterd
