// The head's users and node tokens (daemon/head/identity/): only hashes
// kept, a removal or revocation refused at the next call, node tokens that
// register nodes and nothing else, the journal replayed, an old state
// folder's token as the admin's, and the refusals' words.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "daemon/head/identity/access_rules.h"
#include "daemon/head/identity/shown_to.h"
#include "daemon/head/identity/user_registry.h"
#include "daemon/head/job_store.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

constexpr char kClusterToken[] = "the-state-folders-token-0123456789";

AddUserRequest User(const std::string& name, bool admin = false, std::vector<std::string> groups = {}) {
  AddUserRequest request;
  request.set_name(name);
  request.set_admin(admin);
  for (const std::string& group : groups) request.add_groups(group);
  return request;
}

// Every byte the journal holds, as one string.
std::string JournalBytes(const MemoryJobStore& store) {
  std::string all;
  for (const JournalEntry& entry : store.entries()) all += entry.SerializeAsString();
  return all;
}

}  // namespace

TEST_CASE("a user's token resolves to them, and the head keeps only its hash", "[identity]") {
  QuietLogs quiet;
  FakeClock clock;
  MemoryJobStore store;
  UserRegistry users(&clock, &store);
  users.SetAdminToken(kClusterToken);
  auto alice = users.AddUser(User("alice", false, {"team-a", "team-b", "team-a"}));
  REQUIRE(alice.ok());
  REQUIRE(alice->token().size() >= 64);

  auto who = users.Resolve(alice->token());
  REQUIRE(who.ok());
  CHECK(who->kind == Principal::Kind::kUser);
  CHECK(who->user == "alice");
  CHECK_FALSE(who->admin);
  CHECK(who->groups == std::vector<std::string>{"team-a", "team-b"});  // once each

  // The journal has the token's digest, never the token (nor the cluster token).
  const std::string journal = JournalBytes(store);
  CHECK(journal.find(alice->token()) == std::string::npos);
  CHECK(journal.find(kClusterToken) == std::string::npos);
  CHECK(journal.find(DigestBytes(DigestOfToken(alice->token()))) != std::string::npos);

  auto wrong = users.Resolve(alice->token() + "x");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().code() == Status::Code::kUnauthenticated);
  CHECK(wrong.status().message() == kWrongToken);
  CHECK(users.Resolve("").status().message() == kMissingToken);

  // A second user named alike is refused; a bad name is named.
  CHECK(users.AddUser(User("alice")).status().code() == Status::Code::kAlreadyExists);
  CHECK(users.AddUser(User("9lives")).status().message() ==
        "user name '9lives' is not one: start with a letter, then letters, digits, '.', '_' or '-'");
  CHECK(users.AddUser(User("carol", false, {"bad group"})).status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("an old state folder's token is the admin user's, who cannot be removed", "[identity]") {
  QuietLogs quiet;
  FakeClock clock;
  MemoryJobStore store;  // empty: a head from before users
  UserRegistry users(&clock, &store);
  REQUIRE(users.Restore().ok());
  users.SetAdminToken(kClusterToken);
  auto admin = users.Resolve(kClusterToken);
  REQUIRE(admin.ok());
  CHECK(admin->user == "admin");
  CHECK(admin->IsAdmin());
  CHECK(users.ListUsers().size() == 1);
  CHECK(users.RemoveUser("admin").status().code() == Status::Code::kFailedPrecondition);
  CHECK(users.Resolve(kClusterToken).ok());
}

TEST_CASE("a removed user's token is refused at once, saying it was revoked", "[identity]") {
  QuietLogs quiet;
  FakeClock clock;
  MemoryJobStore store;
  UserRegistry users(&clock, &store);
  auto bob = users.AddUser(User("bob"));
  REQUIRE(bob.ok());
  REQUIRE(users.Resolve(bob->token()).ok());
  const uint64_t before = users.revocations();
  REQUIRE(users.RemoveUser("bob").ok());
  auto refused = users.Resolve(bob->token());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Status::Code::kUnauthenticated);
  CHECK(refused.status().message() == "this token was revoked: user bob was removed");
  CHECK(users.revocations() == before + 1);
  CHECK_FALSE(users.Exists("bob"));
  CHECK(users.RemoveUser("bob").status().code() == Status::Code::kNotFound);

  // Added again, bob gets a new token; the old one stays refused.
  auto again = users.AddUser(User("bob"));
  REQUIRE(again.ok());
  CHECK(users.Resolve(again->token())->user == "bob");
  CHECK_FALSE(users.Resolve(bob->token()).ok());
}

TEST_CASE("a node token registers a node and nothing else, until it is revoked", "[identity]") {
  QuietLogs quiet;
  FakeClock clock;
  MemoryJobStore store;
  UserRegistry users(&clock, &store);
  users.SetAdminToken(kClusterToken);
  auto made = users.CreateNodeToken("rack 4");
  REQUIRE(made.ok());
  CHECK(made->info().id() == "nodetoken-0001");
  CHECK(JournalBytes(store).find(made->token()) == std::string::npos);

  auto node = users.Resolve(made->token());
  REQUIRE(node.ok());
  CHECK(node->IsNode());
  CHECK_FALSE(node->IsAdmin());
  CHECK(MayRegisterNode(*node).ok());
  CHECK(RequireUser(*node).message() == "a node token may only register a node");
  CHECK(RequireAdmin(*node, "user add").message() == "a node token may only register a node");
  CHECK(MayActOn(*node, "job-0001", "admin", OwnedAction::kStop).message() == "a node token may only register a node");

  REQUIRE(users.ListNodeTokens().size() == 1);
  REQUIRE(users.RevokeNodeToken("nodetoken-0001").ok());
  auto revoked = users.Resolve(made->token());
  REQUIRE_FALSE(revoked.ok());
  CHECK(revoked.status().message() == "this token was revoked: node token nodetoken-0001 (rack 4)");
  CHECK(users.ListNodeTokens().empty());
  CHECK(users.RevokeNodeToken("nodetoken-0001").status().code() == Status::Code::kNotFound);
}

TEST_CASE("a restarted head restores its users, their changes, removals and node tokens from the journal",
          "[identity]") {
  QuietLogs quiet;
  FakeClock clock;
  MemoryJobStore store;
  std::string alice_token, bob_token, node_token;
  {
    UserRegistry users(&clock, &store);
    users.SetAdminToken(kClusterToken);
    alice_token = users.AddUser(User("alice", false, {"team-a"}))->token();
    bob_token = users.AddUser(User("bob", true))->token();
    node_token = users.CreateNodeToken("")->token();
    users.CreateNodeToken("revoked soon");
    REQUIRE(users.RevokeNodeToken("nodetoken-0002").ok());
    SetUserRequest set;
    set.set_name("alice");
    set.set_set_max_priority(true);
    set.set_max_priority(50);
    set.set_set_groups(true);
    set.add_groups("team-c");
    REQUIRE(users.SetUser(set).ok());
    REQUIRE(users.RemoveUser("bob").ok());
  }
  UserRegistry restored(&clock, &store);
  REQUIRE(restored.Restore().ok());
  restored.SetAdminToken(kClusterToken);
  CHECK(restored.Resolve(alice_token)->user == "alice");
  CHECK(restored.GroupsOf("alice") == std::vector<std::string>{"team-c"});
  CHECK(restored.MaxPriorityOf("alice") == std::optional<int>(50));
  CHECK_FALSE(restored.IsAdmin("alice"));
  CHECK(restored.Resolve(bob_token).status().message() == "this token was revoked: user bob was removed");
  CHECK(restored.Resolve(node_token)->IsNode());
  CHECK(restored.ListNodeTokens().size() == 1);
  CHECK(restored.Resolve(kClusterToken)->user == "admin");
  // Numbering goes on after the ids handed out.
  CHECK(restored.CreateNodeToken("")->info().id() == "nodetoken-0003");
}

TEST_CASE("a change the users' journal cannot hold is refused and changes nothing", "[identity]") {
  QuietLogs quiet;
  FakeClock clock;
  MemoryJobStore store;
  UserRegistry users(&clock, &store);
  auto carol = users.AddUser(User("carol"));
  REQUIRE(carol.ok());
  store.set_fail_appends(true);
  CHECK(users.AddUser(User("dave")).status().code() == Status::Code::kUnavailable);
  CHECK_FALSE(users.Exists("dave"));
  CHECK(users.RemoveUser("carol").status().code() == Status::Code::kUnavailable);
  CHECK(users.Resolve(carol->token()).ok());  // not removed: the removal did not hold
}

TEST_CASE("refusals name the owner, the caller and the rule", "[identity]") {
  Principal bob{Principal::Kind::kUser, "bob", false, {}};
  Principal alice{Principal::Kind::kUser, "alice", false, {}};
  Principal root{Principal::Kind::kUser, "root", true, {}};
  CHECK(MayActOn(bob, "job-0007", "alice", OwnedAction::kStop).message() ==
        "job-0007 belongs to alice; bob may not stop it");
  CHECK(MayActOn(bob, "job-0007", "alice", OwnedAction::kDelete).message() ==
        "job-0007 belongs to alice; bob may not delete it");
  CHECK(MayActOn(bob, "job-0007", "alice", OwnedAction::kReadLogs).message() ==
        "job-0007 belongs to alice; bob may not read its logs");
  CHECK(MayActOn(bob, "job-0007", "alice", OwnedAction::kStop).code() == Status::Code::kPermissionDenied);
  CHECK(MayActOn(alice, "job-0007", "alice", OwnedAction::kStop).ok());
  CHECK(MayActOn(root, "job-0007", "alice", OwnedAction::kDelete).ok());
  CHECK(RequireAdmin(bob, "user add").message() == "user add is for admins; bob is not one");
  CHECK(RequireAdmin(root, "user add").ok());
  CHECK_FALSE(MayRegisterNode(bob).ok());
  CHECK(MayRegisterNode(root).ok());
  // A record from before owners is the admin's.
  JobInfo old;
  CHECK(OwnerOf(old) == "admin");
}

TEST_CASE("max_submitted_jobs_per_user counts each owner's jobs", "[identity][limits]") {
  QuietLogs quiet;
  Harness h;
  h.config.max_submitted_jobs_per_user = 2;
  h.head = std::make_unique<HeadCore>(&h.clock, h.config, &h.store, &h.logs, nullptr);
  h.AddNode("a", 1);
  REQUIRE(h.head->jobs().Submit(h.Request(1, 1, PACK), "alice").ok());
  REQUIRE(h.head->jobs().Submit(h.Request(1, 1, PACK), "alice").ok());
  auto third = h.head->jobs().Submit(h.Request(1, 1, PACK), "alice");
  REQUIRE_FALSE(third.ok());
  CHECK(third.status().message().rfind("refused: user alice has 2 jobs not yet finished, and 1 job more", 0) == 0);
  // Another user's count is their own.
  auto bobs = h.head->jobs().Submit(h.Request(1, 1, PACK), "bob");
  REQUIRE(bobs.ok());
  CHECK(h.head->jobs().Get(*bobs)->owner() == "bob");
}

TEST_CASE("another user's job shows without the store ids of its package, checkpoints and outputs, nor its hang diagnosis",
          "[identity]") {
  JobInfo job;
  job.set_job_id("job-0007");
  job.set_owner("alice");
  job.mutable_spec()->set_package_id("aa11");
  job.set_outputs_manifest("bb22");
  job.add_stored_checkpoints()->set_manifest_id("cc33");
  job.add_attempts()->set_hang_diagnosis("rank 0: futex_wait\nEpoch 3 secret-path/data");
  job.add_attempts();  // none: nothing to hide
  Principal alice{Principal::Kind::kUser, "alice", false, {}};
  Principal bob{Principal::Kind::kUser, "bob", false, {}};
  Principal root{Principal::Kind::kUser, "root", true, {}};

  JobInfo shown = job;
  HideOthersData(alice, &shown);
  CHECK(shown.outputs_manifest() == "bb22");
  shown = job;
  HideOthersData(root, &shown);
  CHECK(shown.stored_checkpoints(0).manifest_id() == "cc33");
  ListJobsReply page;
  *page.add_jobs() = job;
  HideOthersData(bob, &page);
  CHECK(page.jobs(0).spec().package_id() == kHiddenId);
  CHECK(page.jobs(0).outputs_manifest() == kHiddenId);
  CHECK(page.jobs(0).stored_checkpoints(0).manifest_id() == kHiddenId);
  CHECK(page.jobs(0).attempts(0).hang_diagnosis() == kHiddenDiagnosis);
  CHECK(page.jobs(0).attempts(1).hang_diagnosis().empty());
  CHECK(shown.attempts(0).hang_diagnosis() == job.attempts(0).hang_diagnosis());  // root sees it
  CHECK(page.jobs(0).owner() == "alice");  // the rest shows
}
