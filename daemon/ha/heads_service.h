// HaHeads (proto/ha_heads.proto) as a head in HA serves it, leading or
// standing by: the heads registered in etcd and which one leads. No token
// is asked: it tells only where the heads are, as a standby's redirect does.
#pragma once

#include "ha_heads.grpc.pb.h"

namespace clusterd {

class HeadLeadership;

class HeadsService : public HaHeads::Service {
 public:
  // REQUIRES: `leadership` outlives the service.
  explicit HeadsService(const HeadLeadership* leadership) : leadership_(leadership) {}
  grpc::Status ListHeads(grpc::ServerContext* context, const ListHeadsRequest* request, HeadsReply* reply) override;

 private:
  const HeadLeadership* leadership_;
};

}  // namespace clusterd
