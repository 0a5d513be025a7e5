// Which IP a machine is reached at, and which interface holds it. Used to
// pick the address a head listens and advertises on, the address a worker
// registers with, and the interface Gloo/NCCL must bind on the ranks
// (NOTES.md: the host name resolves to loopback, so c10d's default is wrong
// on every real machine).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

// 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackAddress(const std::string& ip);

// The IPv4 address of the interface that holds the default route (lowest
// metric), else of the first interface that is up and not loopback. Fails
// when the machine has neither, naming what it looked at.
Result<std::string> PrimaryAddress();

// A UDP socket connect()ed to host:port (the first of its addresses that
// has a route), for send(); the caller closes it. Connecting sends nothing.
Result<int> ConnectUdp(const std::string& host, int port);

// A UDP socket bound to ip:port (0: any free port), non-blocking; the
// caller closes it. The IPv4 wildcard 0.0.0.0 binds [::] for both
// families where the machine has IPv6, as gRPC binds its listening port,
// so that an agent that reached the head over IPv6 is heard too.
Result<int> BindUdp(const std::string& ip, int port);
// The same for a TCP socket to listen on (bound, not yet listening), with
// SO_REUSEADDR.
Result<int> BindTcp(const std::string& ip, int port);

// The local address this machine would use to reach host:port.
Result<std::string> LocalAddressToward(const std::string& host, int port);

// The name of the interface that holds `ip` ("lo" for 127.0.0.1), empty if none.
std::string InterfaceOf(const std::string& ip);

// Every address of this machine's interfaces (loopback included).
std::vector<std::string> LocalAddresses();

// The IP of a gRPC peer string: "ipv4:10.0.0.2:5555" -> "10.0.0.2",
// "ipv6:[::1]:5555" -> "::1"; empty for anything else (unix sockets).
std::string PeerIp(const std::string& grpc_peer);

}  // namespace clusterd
