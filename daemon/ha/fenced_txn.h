// A write that only a leader still in office can make: applied only if the
// leader key's create_revision is still the one its election won with. A
// head deposed meanwhile (its lease expired, another won) finds its write
// refused, as one atomic step with the check, so that no write of a former
// leader lands after a new leader has begun.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/ha/etcd_client.h"

namespace clusterd {

struct FencedTxnOutcome {
  bool deposed = false;   // the leader key is gone or another's: nothing was applied
  int64_t revision = 0;   // the store's revision after the write (when applied)
};

// Applies `ops` (puts, deletes) if `leader_key`'s create_revision is still
// `leader_revision`. A transport failure is an error (the write may or may
// not have been applied: read back before retrying); a deposed leader is
// not an error but an outcome.
Result<FencedTxnOutcome> ApplyFencedTxn(EtcdClient* client, const std::string& leader_key, int64_t leader_revision,
                                        const std::vector<EtcdOp>& ops);

}  // namespace clusterd
