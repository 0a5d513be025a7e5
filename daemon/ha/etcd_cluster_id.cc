#include "daemon/ha/etcd_cluster_id.h"

#include <fmt/format.h>

namespace clusterd {

std::string EtcdClusterIdKey(const std::string& prefix) { return prefix + "/cluster_id"; }

Result<std::string> EtcdClusterId(EtcdClient* etcd, const std::string& prefix, const std::string& proposed) {
  const std::string key = EtcdClusterIdKey(prefix);
  // Created only if absent; otherwise the transaction reads what is there,
  // in the same step, so two heads asking at once agree.
  ASSIGN_OR_RETURN(EtcdTxnResult txn, etcd->Txn({EtcdCompare::CreateRevisionIs(key, 0)}, {EtcdOp::Put(key, proposed)},
                                                {EtcdOp::Get(key)}));
  if (txn.succeeded) return proposed;
  if (txn.reads.empty() || txn.reads.front().empty()) {
    return Status::Internal(fmt::format("etcd said {} exists but returned no value for it", key));
  }
  const std::string& id = txn.reads.front().front().value;
  if (id.empty() || id.size() > 32 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Status::FailedPrecondition(
        fmt::format("{} in etcd is '{}', not a cluster id (hex digits): delete the key to have a new one made",
                    key, id.substr(0, 64)));
  }
  return id;
}

}  // namespace clusterd
