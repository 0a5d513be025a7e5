#include "daemon/ha/heads_service.h"

#include "daemon/ha/head_leadership.h"

namespace clusterd {

grpc::Status HeadsService::ListHeads(grpc::ServerContext*, const ListHeadsRequest*, HeadsReply* reply) {
  const LeadershipState state = leadership_->State();
  auto heads = leadership_->Heads();
  if (!heads.ok()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "cannot read the heads from etcd: " + heads.status().message());
  }
  for (const RegisteredHead& head : *heads) {
    HeadEntry* entry = reply->add_heads();
    entry->set_id(head.id);
    entry->set_address(head.address);
    entry->set_leading(!state.leader.id.empty() && head.id == state.leader.id);
    entry->set_started_unix_ms(head.started_unix_ms);
  }
  reply->set_leader_id(state.leader.id);
  reply->set_leader_address(state.leader.address);
  reply->set_leading_since_unix_ms(state.leading ? state.leading_since_unix_ms : 0);
  reply->set_lease_age_ms(state.leading ? state.lease_age_ms : -1);
  reply->set_answered_by(leadership_->id());
  return grpc::Status::OK;
}

}  // namespace clusterd
