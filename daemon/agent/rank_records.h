// The records `clusterd stop` reads to kill ranks whose agent died without
// stopping them: one file a slot in the session's ranks/ folder (named
// after the agent's pid, as several agents may share the folder), holding a
// running rank's process record (pid, start time, session). A slot is
// blanked, not removed, when its rank ends and reused by the next one:
// creating and deleting a file per rank made ext4 search past every inode
// freed in the last minutes for each new one, slowing every launch after a
// burst. Each slot's file stays open.
// NOT thread-safe: the rank runner's loop owns it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace clusterd {

class RankRecords {
 public:
  explicit RankRecords(std::string dir);  // made if missing
  ~RankRecords();  // removes the free slots' files
  RankRecords(const RankRecords&) = delete;
  RankRecords& operator=(const RankRecords&) = delete;

  // Writes pid's record into a free slot; returns the slot.
  size_t Record(pid_t pid);
  // The slot's rank ended: its record is blanked and the slot free again.
  void Clear(size_t slot);

 private:
  std::string PathOf(size_t slot) const;

  std::string dir_;
  std::string prefix_;  // of this object's slot files
  std::vector<bool> in_use_;
  std::vector<int> fds_;  // each slot's file
};

}  // namespace clusterd
