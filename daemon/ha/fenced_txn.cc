#include "daemon/ha/fenced_txn.h"

namespace clusterd {

Result<FencedTxnOutcome> ApplyFencedTxn(EtcdClient* client, const std::string& leader_key, int64_t leader_revision,
                                        const std::vector<EtcdOp>& ops) {
  if (leader_revision <= 0) {
    return Status::FailedPrecondition("fenced write: no leader revision (this head never led)");
  }
  for (const auto& op : ops) {
    if (op.kind != EtcdOp::Kind::kPut && op.kind != EtcdOp::Kind::kDelete && op.kind != EtcdOp::Kind::kDeletePrefix) {
      return Status::InvalidArgument("fenced write: only puts and deletes, not reads");
    }
    if (op.key == leader_key) {
      return Status::InvalidArgument("fenced write: may not touch the leader key " + leader_key);
    }
  }
  auto txn = client->Txn({EtcdCompare::CreateRevisionIs(leader_key, leader_revision)}, ops);
  if (!txn.ok()) return txn.status().WithContext("fenced write");
  FencedTxnOutcome outcome;
  outcome.deposed = !txn->succeeded;
  outcome.revision = txn->revision;
  return outcome;
}

}  // namespace clusterd
