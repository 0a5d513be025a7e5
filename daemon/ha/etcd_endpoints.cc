#include "daemon/ha/etcd_endpoints.h"

#include <cctype>

namespace clusterd {
namespace {

constexpr char kScheme[] = "etcd://";

bool ValidHostName(const std::string& host) {
  if (host.empty()) return false;
  for (char c : host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') return false;
  }
  return true;
}

Status ParseMember(const std::string& url, const std::string& member) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("etcd endpoints '" + url + "': member '" + member + "' " + why);
  };
  if (member.empty()) return Status::InvalidArgument("etcd endpoints '" + url + "': an empty member in the list");
  std::string host;
  std::string port;
  if (member.front() == '[') {
    const size_t close = member.find(']');
    if (close == std::string::npos) return bad("opens '[' for an IPv6 address and never closes it");
    host = member.substr(1, close - 1);
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) {
      return bad("has no valid IPv6 address between [ and ]");
    }
    if (close + 1 >= member.size() || member[close + 1] != ':') return bad("has no :PORT after its address");
    port = member.substr(close + 2);
  } else {
    const size_t colon = member.rfind(':');
    if (colon == std::string::npos) return bad("has no :PORT (etcd's client port is usually 2379)");
    host = member.substr(0, colon);
    port = member.substr(colon + 1);
    if (!ValidHostName(host)) return bad("has no valid host name before ':' (an IPv6 address goes in [ ])");
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    return bad("has port '" + port + "', which is not a number");
  }
  const int number = std::stoi(port);
  if (number < 1 || number > 65535) return bad("has port " + port + ", outside 1-65535");
  return Status::Ok();
}

}  // namespace

Status ParseEtcdEndpoints(const std::string& url, EtcdEndpoints* out) {
  if (url.compare(0, sizeof(kScheme) - 1, kScheme) != 0) {
    return Status::InvalidArgument("etcd endpoints '" + url +
                                   "': must start with etcd:// (etcd://HOST:PORT[,HOST:PORT...][/PREFIX])");
  }
  const std::string rest = url.substr(sizeof(kScheme) - 1);
  const size_t slash = rest.find('/');
  const std::string list = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (prefix.find("//") != std::string::npos) {
    return Status::InvalidArgument("etcd endpoints '" + url + "': prefix '" + prefix + "' has an empty part (//)");
  }
  if (list.empty()) {
    return Status::InvalidArgument("etcd endpoints '" + url + "': names no member (etcd://HOST:PORT,...)");
  }
  EtcdEndpoints parsed;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string member = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    RETURN_IF_ERROR(ParseMember(url, member));
    for (const auto& seen : parsed.members) {
      if (seen == member) {
        return Status::InvalidArgument("etcd endpoints '" + url + "': member '" + member + "' is listed twice");
      }
    }
    parsed.members.push_back(member);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  parsed.prefix = prefix;
  *out = std::move(parsed);
  return Status::Ok();
}

}  // namespace clusterd
