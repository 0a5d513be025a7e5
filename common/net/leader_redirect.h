// How a standby head sends callers to the leader, and how they read it.
// A head in HA that does not lead serves no state: it answers every gRPC
// call with FAILED_PRECONDITION and the leader's host:port in the trailing
// metadata kLeaderMetadataKey (docs/HA.md). While it knows of no leader it
// answers UNAVAILABLE, as a head that is away, so that callers try another,
// with the key present and empty.
// Clients and agents are given every head as a comma list
// (--address H1:6379,H2:6379) and follow the redirect.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <string>
#include <vector>

#include "common/session.h"
#include "common/status.h"

namespace clusterd {

inline constexpr char kLeaderMetadataKey[] = "clusterd-leader";

// The leader a standby named in its answer, "" when `status` is no redirect.
inline std::string LeaderRedirectOf(const grpc::Status& status, const grpc::ClientContext& context) {
  if (status.error_code() != grpc::StatusCode::FAILED_PRECONDITION) return "";
  const auto& trailers = context.GetServerTrailingMetadata();
  auto found = trailers.find(kLeaderMetadataKey);
  if (found == trailers.end() || found->second.empty()) return "";
  return std::string(found->second.data(), found->second.size());
}

// "H1:6379,H2:6379" as its addresses, each checked and normalised
// (ParseHostPort). An empty piece or a malformed address is an
// InvalidArgument naming it.
inline Result<std::vector<std::string>> ParseHeadAddresses(const std::string& list) {
  std::vector<std::string> addresses;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    std::string piece = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (piece.empty()) {
      return Status::InvalidArgument("'" + list + "' has an empty head address: give HOST:PORT[,HOST:PORT...]");
    }
    auto parsed = ParseHostPort(piece);
    if (!parsed.ok()) return parsed.status().WithContext("head address '" + piece + "'");
    addresses.push_back(parsed->ToString());
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return addresses;
}

}  // namespace clusterd
