// The head's state in etcd, for a head that has just won leadership: one
// EtcdJobStore (etcd_job_store.h) for each journal the single head keeps in
// its state folder, under the cluster's prefix:
//   <prefix>/state/jobs/     jobs, attempts, metrics, arrays (the journal)
//   <prefix>/state/sweeps/   sweeps and their trials (sweeps.journal)
//   <prefix>/state/nodes/    the node table (nodes.journal)
//   <prefix>/state/users/    users and node tokens, tokens as SHA-256 only (users.journal)
//   <prefix>/state/quotas/   quotas (quotas.journal)
// Each is fenced by the same leader revision: once any of them finds the
// head deposed, on_deposed is called (once per store that finds it) and
// every later write of that store fails.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "daemon/ha/etcd_client.h"
#include "daemon/ha/etcd_job_store.h"

namespace clusterd {

struct EtcdStateStores {
  std::unique_ptr<EtcdJobStore> jobs;
  std::unique_ptr<EtcdJobStore> sweeps;
  std::unique_ptr<EtcdJobStore> nodes;
  std::unique_ptr<EtcdJobStore> users;
  std::unique_ptr<EtcdJobStore> quotas;
};

// Opens the five stores of the leader whose election won with
// `leader_revision` (LeaderElection's leader revision) under `prefix`
// (EtcdEndpoints::prefix), with ha_etcd_txn_kb and ha_etcd_flush_ms from
// `config`. REQUIRES: client outlives the stores. A new leader opens them
// after it won and before it serves: HeadCore::Restore then reads them.
Result<EtcdStateStores> OpenEtcdStateStores(EtcdClient* client, const std::string& prefix, int64_t leader_revision,
                                            const Config& config,
                                            std::function<void(const Status&)> on_deposed);

}  // namespace clusterd
