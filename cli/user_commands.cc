#include "cli/user_commands.h"

#include <exception>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "cli/command_line.h"
#include "common/proto_json.h"

namespace po = boost::program_options;

namespace clusterd::cli {

namespace {

constexpr char kUserUsage[] =
    "user add NAME [--admin] [--group G ...] | user list | user remove NAME | "
    "user set NAME [--group G ...] [--no-groups] [--max-priority N | --no-max-priority]";
constexpr char kTokenUsage[] = "token create --node [--label TEXT] | token list | token revoke ID";

std::string Groups(const UserInfo& user) {
  if (user.groups().empty()) return "-";
  std::string joined;
  for (const std::string& group : user.groups()) joined += (joined.empty() ? "" : ",") + group;
  return joined;
}

std::string MaxPriority(const UserInfo& user) {
  return user.has_max_priority() ? std::to_string(user.max_priority()) : "-";
}

// Calls `method` on a new client; prints the failure and returns 1, or 0.
template <typename Request, typename Reply, typename Method>
int CallHead(const CommandLine& line, Method method, const Request& request, Reply* reply) {
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  Status st = (*client)->Call(method, request, reply);
  if (!st.ok()) return Fail(st);
  return 0;
}

int UserList(const CommandLine& line) {
  ListUsersReply reply;
  if (int code = CallHead(line, &HeadService::Stub::IdentityListUsers, ListUsersRequest(), &reply)) return code;
  if (line.json) {
    std::cout << ToJson(reply) << "\n";
    return 0;
  }
  std::cout << fmt::format("{:<20} {:<6} {:<30} {}\n", "USER", "ADMIN", "GROUPS", "MAX PRIORITY");
  for (const UserInfo& user : reply.users()) {
    std::cout << fmt::format("{:<20} {:<6} {:<30} {}\n", user.name(), user.admin() ? "yes" : "no", Groups(user),
                             MaxPriority(user));
  }
  return 0;
}

}  // namespace

int UserCommand(const std::vector<std::string>& args) {
  CommandLine line;
  bool admin = false, no_groups = false, no_max_priority = false;
  std::vector<std::string> groups;
  std::string max_priority;  // text, so that "not given" is told from 0
  po::options_description flags = JsonFlag(&line);
  flags.add_options()("admin", po::bool_switch(&admin), "user add: the new user is an admin")(
      "group", po::value(&groups), "a group of the user (repeat for more); user set: replaces their groups")(
      "no-groups", po::bool_switch(&no_groups), "user set: the user is in no group")(
      "max-priority", po::value(&max_priority), "user set: the highest priority their jobs may ask")(
      "no-max-priority", po::bool_switch(&no_max_priority), "user set: no cap on their jobs' priority");
  int code = ParseCommandLine("user", kUserUsage, args, flags, 1, 2, &line);
  if (code >= 0) return code;
  const std::string& verb = line.positional[0];
  const bool named = line.positional.size() == 2;
  if (verb == "list" && !named) return UserList(line);
  if (!named || (verb != "add" && verb != "remove" && verb != "set")) {
    return Fail(Status::InvalidArgument(fmt::format("usage: clusterctl {}", kUserUsage)));
  }
  const std::string& name = line.positional[1];
  if (verb == "add") {
    AddUserRequest request;
    request.set_name(name);
    request.set_admin(admin);
    for (const std::string& group : groups) request.add_groups(group);
    AddUserReply reply;
    if (int failed = CallHead(line, &HeadService::Stub::IdentityAddUser, request, &reply)) return failed;
    if (line.json) {
      std::cout << ToJson(reply) << "\n";
      return 0;
    }
    std::cout << fmt::format("User {} added{}. Their token, shown this once (the head keeps only its hash):\n{}\n",
                             name, admin ? " (admin)" : "", reply.token())
              << "They put it where clusterctl finds a token: --token, $CLUSTER_TOKEN, or the token file of their "
                 "session folder.\n";
    return 0;
  }
  if (verb == "remove") {
    RemoveUserRequest request;
    request.set_name(name);
    UserInfo reply;
    if (int failed = CallHead(line, &HeadService::Stub::IdentityRemoveUser, request, &reply)) return failed;
    std::cout << (line.json ? ToJson(reply) : fmt::format("User {} removed: their token is refused from now on.", name))
              << "\n";
    return 0;
  }
  SetUserRequest request;
  request.set_name(name);
  if (!groups.empty() && no_groups) return Fail(Status::InvalidArgument("--group and --no-groups contradict"));
  if (!groups.empty() || no_groups) {
    request.set_set_groups(true);
    for (const std::string& group : groups) request.add_groups(group);
  }
  const bool gave_max = !max_priority.empty();
  if (gave_max && no_max_priority) return Fail(Status::InvalidArgument("--max-priority and --no-max-priority contradict"));
  if (gave_max || no_max_priority) {
    request.set_set_max_priority(true);
    if (gave_max) {
      size_t used = 0;
      int value = 0;
      try {
        value = std::stoi(max_priority, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != max_priority.size()) {
        return Fail(Status::InvalidArgument(fmt::format("--max-priority {}: not an integer", max_priority)));
      }
      request.set_max_priority(value);
    }
  }
  if (!request.set_groups() && !request.set_max_priority()) {
    return Fail(Status::InvalidArgument(
        "user set NAME: say what to change (--group G, --no-groups, --max-priority N, --no-max-priority)"));
  }
  UserInfo reply;
  if (int failed = CallHead(line, &HeadService::Stub::IdentitySetUser, request, &reply)) return failed;
  std::cout << (line.json ? ToJson(reply)
                          : fmt::format("User {}: groups {}, max priority {}.", reply.name(), Groups(reply),
                                        MaxPriority(reply)))
            << "\n";
  return 0;
}

int TokenCommand(const std::vector<std::string>& args) {
  CommandLine line;
  bool node = false;
  std::string label;
  po::options_description flags = JsonFlag(&line);
  flags.add_options()("node", po::bool_switch(&node), "token create: a node token (the only kind; users get theirs "
                                                      "from `user add`)")(
      "label", po::value(&label), "token create: a note on what the token is for (a machine, a pool)");
  int code = ParseCommandLine("token", kTokenUsage, args, flags, 1, 2, &line);
  if (code >= 0) return code;
  const std::string& verb = line.positional[0];
  if (verb == "create" && line.positional.size() == 1) {
    if (!node) {
      return Fail(Status::InvalidArgument("token create makes node tokens: say --node (a user's token comes from "
                                          "`clusterctl user add NAME`)"));
    }
    CreateNodeTokenRequest request;
    request.set_label(label);
    CreateNodeTokenReply reply;
    if (int failed = CallHead(line, &HeadService::Stub::IdentityCreateNodeToken, request, &reply)) return failed;
    if (line.json) {
      std::cout << ToJson(reply) << "\n";
      return 0;
    }
    std::cout << fmt::format("Node token {} made. Shown this once (the head keeps only its hash):\n{}\n",
                             reply.info().id(), reply.token())
              << "A worker joins with it: clusterd start --address HEAD:PORT --token TOKEN. It may register a node "
                 "and nothing else.\n";
    return 0;
  }
  if (verb == "list" && line.positional.size() == 1) {
    ListNodeTokensReply reply;
    if (int failed = CallHead(line, &HeadService::Stub::IdentityListNodeTokens, ListNodeTokensRequest(), &reply)) {
      return failed;
    }
    if (line.json) {
      std::cout << ToJson(reply) << "\n";
      return 0;
    }
    std::cout << fmt::format("{:<16} {}\n", "ID", "LABEL");
    for (const NodeTokenInfo& token : reply.tokens()) {
      std::cout << fmt::format("{:<16} {}\n", token.id(), token.label().empty() ? "-" : token.label());
    }
    return 0;
  }
  if (verb == "revoke" && line.positional.size() == 2) {
    RevokeNodeTokenRequest request;
    request.set_id(line.positional[1]);
    NodeTokenInfo reply;
    if (int failed = CallHead(line, &HeadService::Stub::IdentityRevokeNodeToken, request, &reply)) return failed;
    std::cout << (line.json ? ToJson(reply)
                            : fmt::format("Node token {} revoked: a node that registers with it is refused.",
                                          reply.id()))
              << "\n";
    return 0;
  }
  return Fail(Status::InvalidArgument(fmt::format("usage: clusterctl {}", kTokenUsage)));
}

int WhoAmICommand(const std::vector<std::string>& args) {
  CommandLine line;
  int code = ParseCommandLine("whoami", "whoami [--json]", args, JsonFlag(&line), 0, 0, &line);
  if (code >= 0) return code;
  WhoAmIReply reply;
  if (int failed = CallHead(line, &HeadService::Stub::IdentityWhoAmI, WhoAmIRequest(), &reply)) return failed;
  if (line.json) {
    std::cout << ToJson(reply) << "\n";
    return 0;
  }
  std::string groups;
  for (const std::string& group : reply.groups()) groups += (groups.empty() ? "" : ",") + group;
  std::cout << fmt::format("{}{}{}\n", reply.user(), reply.admin() ? " (admin)" : "",
                           groups.empty() ? "" : ", groups " + groups);
  return 0;
}

}  // namespace clusterd::cli
