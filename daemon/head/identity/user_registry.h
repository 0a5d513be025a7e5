// The head's users and node tokens (docs/SHARING.md, "Users and tokens"),
// and who a presented token is. A user has a name, an admin flag, groups
// and an optional max_priority; a node token may register a node and do
// nothing else. Of every token only its SHA-256 is kept (token_digest.h).
//
// The head's cluster token (its state folder's token file) is the token of
// the admin user "admin": a head with no users added, and every tool and
// test that holds that token, works as before users existed. "admin" can
// be changed (groups, max_priority) but not removed; its token is the file.
//
// Changes are journalled (user_journal.h) and synced before they return.
// Thread-safe: every rpc and http thread resolves tokens while the head's
// loop adds and removes users; a removal holds for the next Resolve.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/status.h"
#include "daemon/head/identity/principal.h"
#include "daemon/head/identity/token_digest.h"
#include "daemon/head/identity/user_journal.h"
#include "daemon/head/job_store.h"

namespace clusterd {

// The user whose token is the head's cluster token, and the owner of jobs
// recorded before jobs had owners.
inline constexpr char kAdminUser[] = "admin";

// What Resolve says of a token it cannot take. Each rpc and http front end
// words its own hint after it (where the token file is, which header).
inline constexpr char kMissingToken[] = "missing cluster token";
inline constexpr char kWrongToken[] = "wrong cluster token";

class UserRegistry {
 public:
  // A registry of one user, "admin" with `token`, journalled nowhere: what
  // a server made with a bare token (tests, tools) checks calls against.
  static std::unique_ptr<UserRegistry> AdminOnly(const std::string& token);

  // `store` may be null: users are kept in memory only. REQUIRES: clock
  // and store outlive this object.
  UserRegistry(const Clock* clock, JobStore* store);

  // The head's cluster token, the admin user's (call before serving).
  void SetAdminToken(std::string_view token);
  // Replays the users' journal.
  Status Restore();

  // Who holds `token`: Unauthenticated saying kMissingToken, kWrongToken,
  // or that it was revoked (and whose it was).
  Result<Principal> Resolve(std::string_view token) const;

  // Admin's changes. Durable when they return OK (Unavailable when the
  // journal cannot be written: nothing changed). AddUser and
  // CreateNodeToken answer with the new token, shown this once.
  Result<AddUserReply> AddUser(const AddUserRequest& request);
  Result<UserInfo> RemoveUser(const std::string& name);
  Result<UserInfo> SetUser(const SetUserRequest& request);
  Result<CreateNodeTokenReply> CreateNodeToken(const std::string& label);
  Result<NodeTokenInfo> RevokeNodeToken(const std::string& id);

  // Queries, by name (the queue policy and preemption take these as
  // std::function's). An unknown name: nullopt / false / empty.
  std::optional<UserInfo> Find(const std::string& name) const;
  bool Exists(const std::string& name) const { return Find(name).has_value(); }
  bool IsAdmin(const std::string& name) const;
  std::vector<std::string> GroupsOf(const std::string& name) const;
  std::optional<int> MaxPriorityOf(const std::string& name) const;
  // Users in name order; node tokens in id order. Never a token.
  std::vector<UserInfo> ListUsers() const;
  std::vector<NodeTokenInfo> ListNodeTokens() const;
  // Grows with every removal or revocation: a long-lived stream checks its
  // principal again (StillValid) only when this moved.
  uint64_t revocations() const;
  // OK while the user (or node token) `principal` was resolved from is
  // still there; Unauthenticated saying it was revoked once it is not.
  Status StillValid(const Principal& principal) const;

  // Names of users and groups: a letter, then letters, digits, '.', '_'
  // or '-', 64 characters at most (they show in listings and refusals).
  static Status CheckName(const std::string& name, const char* what);

 private:
  struct User {
    UserInfo info;
    TokenDigest digest{};
    bool removed = false;
  };
  struct NodeToken {
    NodeTokenInfo info;
    TokenDigest digest{};
    bool revoked = false;
  };

  UserRecord RecordOf(const User& user) const;
  NodeTokenRecord RecordOf(const NodeToken& token) const;
  // REQUIRES: mutex_ held (exclusive). Journals it when there is a journal.
  Status Journal(const UserRecord& record);
  Status Journal(const NodeTokenRecord& record);

  const Clock* clock_;
  std::unique_ptr<UserJournal> journal_;  // null: memory only
  mutable std::shared_mutex mutex_;
  std::map<std::string, User> users_;             // by name, removed ones kept (their digest says "revoked")
  std::map<std::string, NodeToken> node_tokens_;  // by id, revoked ones kept
  int next_node_token_ = 1;
  std::atomic<uint64_t> revocations_{0};  // read without the lock: every agent frame asks
};

}  // namespace clusterd
