#include "daemon/ha/etcd_state_stores.h"

namespace clusterd {

Result<EtcdStateStores> OpenEtcdStateStores(EtcdClient* client, const std::string& prefix, int64_t leader_revision,
                                            const Config& config,
                                            std::function<void(const Status&)> on_deposed) {
  auto open = [&](const char* name) {
    EtcdJobStoreOptions options;
    options.prefix = prefix;
    options.name = name;
    options.leader_revision = leader_revision;
    options.txn_bytes = config.ha_etcd_txn_kb << 10;
    options.flush_ms = config.ha_etcd_flush_ms;
    options.on_deposed = on_deposed;
    return EtcdJobStore::Open(client, std::move(options));
  };
  EtcdStateStores stores;
  ASSIGN_OR_RETURN(stores.jobs, open("jobs"));
  ASSIGN_OR_RETURN(stores.sweeps, open("sweeps"));
  ASSIGN_OR_RETURN(stores.nodes, open("nodes"));
  ASSIGN_OR_RETURN(stores.users, open("users"));
  ASSIGN_OR_RETURN(stores.quotas, open("quotas"));
  return stores;
}

}  // namespace clusterd
