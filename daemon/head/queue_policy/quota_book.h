// The quotas as an admin sets them (`clusterctl quota set NAME GPU=8
// CPU=64`, `quota remove NAME`), checked, journalled in the quotas' own
// journal (quotas.journal beside the jobs') and replayed at start, so that
// a restarted head holds the same limits. The quotas themselves, and what
// the running jobs use of them, are Quotas'.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <string>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/status.h"
#include "daemon/head/job_store.h"
#include "daemon/head/queue_policy/quotas.h"

namespace clusterd {

class QuotaBook {
 public:
  // store null: quotas are kept in memory only (tests). REQUIRES: each outlives this object.
  QuotaBook(const Clock* clock, Quotas* quotas, JobStore* store) : clock_(clock), quotas_(quotas), store_(store) {}

  // Puts back the quotas the journal holds (the latest record of each name).
  Status Load();
  // Checks the request (a name as a user's or a group's may be; amounts
  // finite and >= 0), journals it, then applies it. Its quota as it is now.
  Result<QuotaInfo> Apply(const SetQuotaRequest& request);
  ListQuotasReply List() const;

 private:
  // Rewrites the journal with the current quotas once it holds far more records.
  void CompactIfLarge();

  const Clock* clock_;
  Quotas* quotas_;
  JobStore* store_;
  int records_ = 0;  // records in the journal
};

}  // namespace clusterd
