#include "daemon/head/identity/user_registry.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "common/logging.h"

namespace clusterd {

namespace {

// Prefixes that say what a token is for, in a file or a paste.
constexpr char kUserTokenPrefix[] = "cdu_";
constexpr char kNodeTokenPrefix[] = "cdn_";

SystemClock* OwnClock() {
  static SystemClock clock;
  return &clock;
}

Status CheckGroups(const google::protobuf::RepeatedPtrField<std::string>& groups) {
  for (const std::string& group : groups) RETURN_IF_ERROR(UserRegistry::CheckName(group, "group"));
  return Status::Ok();
}

// Groups once each, in the order given.
void Dedup(google::protobuf::RepeatedPtrField<std::string>* groups) {
  std::set<std::string> seen;
  google::protobuf::RepeatedPtrField<std::string> kept;
  for (const std::string& group : *groups) {
    if (seen.insert(group).second) *kept.Add() = group;
  }
  *groups = std::move(kept);
}

}  // namespace

std::unique_ptr<UserRegistry> UserRegistry::AdminOnly(const std::string& token) {
  auto registry = std::make_unique<UserRegistry>(OwnClock(), nullptr);
  registry->SetAdminToken(token);
  return registry;
}

UserRegistry::UserRegistry(const Clock* clock, JobStore* store) : clock_(clock) {
  if (store != nullptr) journal_ = std::make_unique<UserJournal>(clock, store);
}

Status UserRegistry::CheckName(const std::string& name, const char* what) {
  if (name.empty()) return Status::InvalidArgument(fmt::format("a {} needs a name", what));
  if (name.size() > 64) {
    return Status::InvalidArgument(fmt::format("{} name '{}...' is {} characters long; at most 64", what,
                                               name.substr(0, 16), name.size()));
  }
  const bool letter_first = std::isalpha(static_cast<unsigned char>(name[0])) != 0;
  const bool rest_ok = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  if (!letter_first || !rest_ok) {
    return Status::InvalidArgument(fmt::format(
        "{} name '{}' is not one: start with a letter, then letters, digits, '.', '_' or '-'", what, name));
  }
  return Status::Ok();
}

void UserRegistry::SetAdminToken(std::string_view token) {
  std::unique_lock lock(mutex_);
  User& admin = users_[kAdminUser];
  admin.info.set_name(kAdminUser);
  admin.info.set_admin(true);
  admin.digest = DigestOfToken(token);
  admin.removed = false;
}

Status UserRegistry::Restore() {
  if (!journal_) return Status::Ok();
  ASSIGN_OR_RETURN(UserJournal::Contents contents, journal_->Load());
  std::unique_lock lock(mutex_);
  for (auto& [name, record] : contents.users) {
    if (name == kAdminUser) {
      // Its token is the token file's, whatever a record says; its groups
      // and max_priority are the admin's to change.
      User& admin = users_[kAdminUser];
      admin.info = record.info();
      admin.info.set_admin(true);
      continue;
    }
    User& user = users_[name];
    user.info = record.info();
    user.digest = DigestFromBytes(record.token_sha256());
    user.removed = record.removed();
  }
  for (auto& [id, record] : contents.node_tokens) {
    NodeToken& token = node_tokens_[id];
    token.info = record.info();
    token.digest = DigestFromBytes(record.token_sha256());
    token.revoked = record.revoked();
    int number = 0;
    if (std::sscanf(id.c_str(), "nodetoken-%d", &number) == 1) next_node_token_ = std::max(next_node_token_, number + 1);
  }
  LOG_INFO("users: {} and {} node tokens restored", users_.size(), node_tokens_.size());
  return Status::Ok();
}

Result<Principal> UserRegistry::Resolve(std::string_view token) const {
  if (token.empty()) return Status::Unauthenticated(kMissingToken);
  const TokenDigest given = DigestOfToken(token);
  std::shared_lock lock(mutex_);
  // Every digest is compared, with no early exit: how long this takes
  // depends on how many there are, not on which one matched.
  const User* user_match = nullptr;
  const NodeToken* node_match = nullptr;
  for (const auto& [name, user] : users_) {
    if (DigestsEqual(given, user.digest)) user_match = &user;
  }
  for (const auto& [id, node] : node_tokens_) {
    if (DigestsEqual(given, node.digest)) node_match = &node;
  }
  if (user_match != nullptr) {
    if (user_match->removed) {
      return Status::Unauthenticated(fmt::format("this token was revoked: user {} was removed", user_match->info.name()));
    }
    Principal principal;
    principal.kind = Principal::Kind::kUser;
    principal.user = user_match->info.name();
    principal.admin = user_match->info.admin();
    principal.groups.assign(user_match->info.groups().begin(), user_match->info.groups().end());
    return principal;
  }
  if (node_match != nullptr) {
    if (node_match->revoked) {
      return Status::Unauthenticated(fmt::format("this token was revoked: node token {} ({})", node_match->info.id(),
                                                 node_match->info.label().empty() ? "no label" : node_match->info.label()));
    }
    Principal principal;
    principal.kind = Principal::Kind::kNode;
    principal.user = node_match->info.id();
    return principal;
  }
  return Status::Unauthenticated(kWrongToken);
}

UserRecord UserRegistry::RecordOf(const User& user) const {
  UserRecord record;
  *record.mutable_info() = user.info;
  // The admin's digest is the token file's: never journalled.
  if (user.info.name() != kAdminUser) record.set_token_sha256(DigestBytes(user.digest));
  record.set_removed(user.removed);
  return record;
}

NodeTokenRecord UserRegistry::RecordOf(const NodeToken& token) const {
  NodeTokenRecord record;
  *record.mutable_info() = token.info;
  record.set_token_sha256(DigestBytes(token.digest));
  record.set_revoked(token.revoked);
  return record;
}

Status UserRegistry::Journal(const UserRecord& record) { return journal_ ? journal_->Record(record) : Status::Ok(); }

Status UserRegistry::Journal(const NodeTokenRecord& record) {
  return journal_ ? journal_->Record(record) : Status::Ok();
}

Result<AddUserReply> UserRegistry::AddUser(const AddUserRequest& request) {
  RETURN_IF_ERROR(CheckName(request.name(), "user"));
  RETURN_IF_ERROR(CheckGroups(request.groups()));
  std::unique_lock lock(mutex_);
  auto existing = users_.find(request.name());
  if (existing != users_.end() && !existing->second.removed) {
    return Status::AlreadyExists(fmt::format("user {} exists already (clusterctl user list)", request.name()));
  }
  User user;
  user.info.set_name(request.name());
  user.info.set_admin(request.admin());
  *user.info.mutable_groups() = request.groups();
  Dedup(user.info.mutable_groups());
  user.info.set_created_unix_ms(clock_->UnixMillis());
  const std::string token = NewSecretToken(kUserTokenPrefix);
  user.digest = DigestOfToken(token);
  RETURN_IF_ERROR(Journal(RecordOf(user)));
  users_[request.name()] = user;
  LOG_INFO("users: added {}{}", user.info.name(), user.info.admin() ? " (admin)" : "");
  AddUserReply reply;
  *reply.mutable_user() = user.info;
  reply.set_token(token);
  return reply;
}

Result<UserInfo> UserRegistry::RemoveUser(const std::string& name) {
  if (name == kAdminUser) {
    return Status::FailedPrecondition(
        "user admin holds the head's own token (the token file in its state folder) and cannot be removed; make "
        "another admin with `clusterctl user add NAME --admin` if that is what is wanted");
  }
  std::unique_lock lock(mutex_);
  auto it = users_.find(name);
  if (it == users_.end() || it->second.removed) {
    return Status::NotFound(fmt::format("no user {} (clusterctl user list)", name));
  }
  User removed = it->second;
  removed.removed = true;
  RETURN_IF_ERROR(Journal(RecordOf(removed)));
  it->second = removed;
  ++revocations_;
  LOG_INFO("users: removed {}; their token is refused from now on", name);
  return removed.info;
}

Result<UserInfo> UserRegistry::SetUser(const SetUserRequest& request) {
  if (request.set_groups()) RETURN_IF_ERROR(CheckGroups(request.groups()));
  std::unique_lock lock(mutex_);
  auto it = users_.find(request.name());
  if (it == users_.end() || it->second.removed) {
    return Status::NotFound(fmt::format("no user {} (clusterctl user list)", request.name()));
  }
  User changed = it->second;
  if (request.set_groups()) {
    *changed.info.mutable_groups() = request.groups();
    Dedup(changed.info.mutable_groups());
  }
  if (request.set_max_priority()) {
    if (request.has_max_priority()) {
      changed.info.set_max_priority(request.max_priority());
    } else {
      changed.info.clear_max_priority();
    }
  }
  RETURN_IF_ERROR(Journal(RecordOf(changed)));
  it->second = changed;
  return changed.info;
}

Result<CreateNodeTokenReply> UserRegistry::CreateNodeToken(const std::string& label) {
  if (label.size() > 200) return Status::InvalidArgument("a node token's label is at most 200 characters");
  std::unique_lock lock(mutex_);
  NodeToken node;
  node.info.set_id(fmt::format("nodetoken-{:04d}", next_node_token_));
  node.info.set_label(label);
  node.info.set_created_unix_ms(clock_->UnixMillis());
  const std::string token = NewSecretToken(kNodeTokenPrefix);
  node.digest = DigestOfToken(token);
  RETURN_IF_ERROR(Journal(RecordOf(node)));
  ++next_node_token_;
  node_tokens_[node.info.id()] = node;
  LOG_INFO("users: node token {} made", node.info.id());
  CreateNodeTokenReply reply;
  *reply.mutable_info() = node.info;
  reply.set_token(token);
  return reply;
}

Result<NodeTokenInfo> UserRegistry::RevokeNodeToken(const std::string& id) {
  std::unique_lock lock(mutex_);
  auto it = node_tokens_.find(id);
  if (it == node_tokens_.end() || it->second.revoked) {
    return Status::NotFound(fmt::format("no node token {} (clusterctl token list)", id));
  }
  NodeToken revoked = it->second;
  revoked.revoked = true;
  RETURN_IF_ERROR(Journal(RecordOf(revoked)));
  it->second = revoked;
  ++revocations_;
  LOG_INFO("users: node token {} revoked", id);
  return revoked.info;
}

std::optional<UserInfo> UserRegistry::Find(const std::string& name) const {
  std::shared_lock lock(mutex_);
  auto it = users_.find(name);
  if (it == users_.end() || it->second.removed) return std::nullopt;
  return it->second.info;
}

bool UserRegistry::IsAdmin(const std::string& name) const {
  auto user = Find(name);
  return user && user->admin();
}

std::vector<std::string> UserRegistry::GroupsOf(const std::string& name) const {
  auto user = Find(name);
  if (!user) return {};
  return {user->groups().begin(), user->groups().end()};
}

std::optional<int> UserRegistry::MaxPriorityOf(const std::string& name) const {
  auto user = Find(name);
  if (!user || !user->has_max_priority()) return std::nullopt;
  return user->max_priority();
}

std::vector<UserInfo> UserRegistry::ListUsers() const {
  std::shared_lock lock(mutex_);
  std::vector<UserInfo> users;
  for (const auto& [name, user] : users_) {
    if (!user.removed) users.push_back(user.info);
  }
  return users;
}

std::vector<NodeTokenInfo> UserRegistry::ListNodeTokens() const {
  std::shared_lock lock(mutex_);
  std::vector<NodeTokenInfo> tokens;
  for (const auto& [id, token] : node_tokens_) {
    if (!token.revoked) tokens.push_back(token.info);
  }
  return tokens;
}

Status UserRegistry::StillValid(const Principal& principal) const {
  std::shared_lock lock(mutex_);
  if (principal.IsNode()) {
    auto it = node_tokens_.find(principal.user);
    if (it == node_tokens_.end() || it->second.revoked) {
      return Status::Unauthenticated(fmt::format("this token was revoked: node token {}", principal.user));
    }
    return Status::Ok();
  }
  auto it = users_.find(principal.user);
  if (it == users_.end() || it->second.removed) {
    return Status::Unauthenticated(fmt::format("this token was revoked: user {} was removed", principal.user));
  }
  return Status::Ok();
}

uint64_t UserRegistry::revocations() const { return revocations_.load(); }

}  // namespace clusterd
