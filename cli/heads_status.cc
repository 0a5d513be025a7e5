#include "cli/heads_status.h"

#include <chrono>

#include <fmt/format.h>

#include "common/net/auth.h"
#include "common/proto_json.h"
#include "ha_heads.grpc.pb.h"

namespace clusterd::cli {

Result<std::optional<HeadsReply>> FetchHeads(const HeadClient& client) {
  auto stub = HaHeads::NewStub(client.channel());
  grpc::ClientContext context;
  AttachToken(&context, client.token());
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(client.timeout_ms()));
  HeadsReply reply;
  grpc::Status status = stub->ListHeads(&context, ListHeadsRequest(), &reply);
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) return std::optional<HeadsReply>();
  if (!status.ok()) {
    return Status::Unavailable(fmt::format("the head at {} could not list the heads: {}", client.address(),
                                           status.error_message()));
  }
  return std::optional<HeadsReply>(std::move(reply));
}

std::string FormatHeads(const HeadsReply& heads, int64_t now_unix_ms) {
  std::string out = fmt::format("Heads (HA, leader: {}):\n", heads.leader_id().empty() ? "none now" : heads.leader_id());
  for (const HeadEntry& head : heads.heads()) {
    std::string what = head.leading() ? "leader" : "standby";
    if (head.leading() && head.id() == heads.answered_by() && heads.leading_since_unix_ms() > 0) {
      what += fmt::format(" for {:.1f} s, lease renewed {:.1f} s ago",
                          static_cast<double>(now_unix_ms - heads.leading_since_unix_ms()) / 1000.0,
                          static_cast<double>(heads.lease_age_ms()) / 1000.0);
    }
    out += fmt::format(" {} at {}: {}\n", head.id(), head.address(), what);
  }
  return out;
}

std::string StatusJson(ClusterStatus status, const std::optional<HeadsReply>& heads) {
  if (heads.has_value()) *status.mutable_ha_heads() = *heads;
  return ToJson(status);
}

}  // namespace clusterd::cli
