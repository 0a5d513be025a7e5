// The users' own journal (users.journal beside the jobs'): a UserRecord for
// every user added, changed or removed, a NodeTokenRecord for every node
// token made or revoked. Replayed at start, the latest record per name (per
// token id) wins. Every record is synced before it returns: a removal
// acknowledged to the admin must hold after a crash, and these are rare.
//
// Compaction: at Load, a file with more than twice the live records (and
// at least 64) is rewritten with the latest record of each.
// NOT thread-safe: UserRegistry calls it under its lock.
#pragma once

#include <map>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/head/job_store.h"
#include "journal.pb.h"

namespace clusterd {

class UserJournal {
 public:
  struct Contents {
    std::map<std::string, UserRecord> users;            // by name, removed ones included
    std::map<std::string, NodeTokenRecord> node_tokens;  // by id, revoked ones included
  };

  // REQUIRES: clock and store outlive this object.
  UserJournal(const Clock* clock, JobStore* store) : clock_(clock), store_(store) {}

  Result<Contents> Load();
  // Appends and syncs; on failure nothing may be taken as changed.
  Status Record(const UserRecord& record);
  Status Record(const NodeTokenRecord& record);

 private:
  Status AppendDurably(const JournalEntry& entry);

  const Clock* clock_;
  JobStore* store_;
};

}  // namespace clusterd
