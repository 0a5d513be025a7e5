#include "common/net/net_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace clusterd {

namespace {

std::string AddressText(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof text);
  } else if (address->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text, sizeof text);
  }
  return text;
}

// The interface of the default route with the lowest metric, from the
// kernel's IPv4 routing table; empty when there is no default route.
std::string DefaultRouteInterface() {
  std::ifstream in("/proc/net/route");
  std::string line, best;
  long best_metric = LONG_MAX;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string iface, destination, gateway, flags, refcnt, use;
    long metric = 0;
    if (!(fields >> iface >> destination >> gateway >> flags >> refcnt >> use >> metric)) continue;
    bool up = (std::strtoul(flags.c_str(), nullptr, 16) & 0x1) != 0;  // RTF_UP
    if (destination == "00000000" && up && metric < best_metric) {
      best = iface;
      best_metric = metric;
    }
  }
  return best;
}

// The first IPv4 address that `accept` takes, in getifaddrs order.
template <typename Accept>
std::string FirstIpv4(Accept accept) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* entry = list; entry && found.empty(); entry = entry->ifa_next) {
    if (!entry->ifa_addr || entry->ifa_addr->sa_family != AF_INET) continue;
    if (accept(*entry)) found = AddressText(entry->ifa_addr);
  }
  freeifaddrs(list);
  return found;
}

}  // namespace

bool IsLoopbackAddress(const std::string& ip) {
  return ip.rfind("127.", 0) == 0 || ip == "::1" || ip == "localhost";
}

Result<std::string> PrimaryAddress() {
  std::string iface = DefaultRouteInterface();
  if (!iface.empty()) {
    std::string ip = FirstIpv4([&](const ifaddrs& e) { return iface == e.ifa_name; });
    if (!ip.empty()) return ip;
  }
  std::string ip = FirstIpv4([](const ifaddrs& e) {
    return (e.ifa_flags & IFF_UP) && !(e.ifa_flags & IFF_LOOPBACK);
  });
  if (!ip.empty()) return ip;
  return Status::NotFound(fmt::format(
      "cannot tell this machine's address: no default route{} and no interface up other than loopback; "
      "pass --node-ip-address", iface.empty() ? "" : fmt::format(" with an IPv4 address (interface {})", iface)));
}

Result<int> ConnectUdp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  int error = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (error != 0) return Status::NotFound(fmt::format("cannot resolve {}: {}", host, gai_strerror(error)));
  int connected = -1;
  std::string failure = "no address";
  for (addrinfo* a = found; a && connected < 0; a = a->ai_next) {
    int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      connected = fd;
    } else {
      failure = std::strerror(errno);
      close(fd);
    }
  }
  freeaddrinfo(found);
  if (connected < 0) return Status::Unavailable(fmt::format("no route to {}: {}", host, failure));
  return connected;
}

namespace {

// type: SOCK_DGRAM or SOCK_STREAM (which also gets SO_REUSEADDR, so that a
// restarted head binds while its old connections linger in TIME_WAIT).
Result<int> BindExactly(const std::string& ip, int port, int type, bool dual_stack) {
  const char* kind = type == SOCK_STREAM ? "TCP" : "UDP";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = type;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* found = nullptr;
  int error = getaddrinfo(ip.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (error != 0) return Status::InvalidArgument(fmt::format("{}: {}", ip, gai_strerror(error)));
  int fd = socket(found->ai_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int v6_only = 0, one = 1;
  if (fd >= 0 && dual_stack) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6_only, sizeof v6_only);
  if (fd >= 0 && type == SOCK_STREAM) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
    Status failed = Status::Unavailable(fmt::format("cannot bind {} {}:{}: {}", kind, ip, port, std::strerror(errno)));
    if (fd >= 0) close(fd);
    freeaddrinfo(found);
    return failed;
  }
  freeaddrinfo(found);
  return fd;
}

Result<int> BindEitherFamily(const std::string& ip, int port, int type) {
  if (ip == "0.0.0.0") {
    auto both = BindExactly("::", port, type, /*dual_stack=*/true);
    // No IPv6 here (EAFNOSUPPORT), or the port taken: IPv4 decides.
    if (both.ok()) return both;
  }
  return BindExactly(ip, port, type, /*dual_stack=*/false);
}

}  // namespace

Result<int> BindUdp(const std::string& ip, int port) { return BindEitherFamily(ip, port, SOCK_DGRAM); }

Result<int> BindTcp(const std::string& ip, int port) { return BindEitherFamily(ip, port, SOCK_STREAM); }

Result<std::string> LocalAddressToward(const std::string& host, int port) {
  ASSIGN_OR_RETURN(int fd, ConnectUdp(host, port));
  sockaddr_storage mine{};
  socklen_t length = sizeof mine;
  std::string local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &length) == 0) local = AddressText(reinterpret_cast<sockaddr*>(&mine));
  const int error = errno;
  close(fd);
  if (local.empty()) return Status::Unavailable(fmt::format("no route to {}: {}", host, std::strerror(error)));
  return local;
}

std::string InterfaceOf(const std::string& ip) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* entry = list; entry && name.empty(); entry = entry->ifa_next) {
    if (entry->ifa_addr && AddressText(entry->ifa_addr) == ip) name = entry->ifa_name;
  }
  freeifaddrs(list);
  return name;
}

std::vector<std::string> LocalAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* entry = list; entry; entry = entry->ifa_next) {
    if (!entry->ifa_addr) continue;
    std::string text = AddressText(entry->ifa_addr);
    if (!text.empty()) out.push_back(text);
  }
  freeifaddrs(list);
  return out;
}

std::string PeerIp(const std::string& grpc_peer) {
  if (grpc_peer.rfind("ipv4:", 0) == 0) {
    std::string rest = grpc_peer.substr(5);
    return rest.substr(0, rest.rfind(':'));
  }
  if (grpc_peer.rfind("ipv6:", 0) == 0) {
    std::string rest = grpc_peer.substr(5);
    // "[::1]:5555", percent-escaped by gRPC in some versions ("%5B::1%5D").
    auto open = rest.find('['), close = rest.find(']');
    if (open != std::string::npos && close != std::string::npos) return rest.substr(open + 1, close - open - 1);
    auto pct = rest.find("%5B"), end = rest.find("%5D");
    if (pct != std::string::npos && end != std::string::npos) return rest.substr(pct + 3, end - pct - 3);
  }
  return "";
}

}  // namespace clusterd
