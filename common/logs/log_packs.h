// Append-only pack files that hold many small logs as records of (key,
// bytes), so that a rank printing a few lines costs no file of its own. On
// ext4 without a journal (these machines' disks) each new inode costs a
// scan past every recently freed one (recently_deleted()): with a file per
// rank that was 40% of the head's CPU, and a third of the launchers', in
// the jobs benchmark's drain.
//
// A record is "CLPK", the key's length and the data's length (u32 each, host
// byte order: packs never leave their machine), the key, the data. Each LogPacks
// appends to a pack of its own, <dir>/<n>.pack with n past every pack
// there (and past those another LogPacks in the same folder began since),
// so the torn last record of a daemon killed mid-write is never written
// after; Load() leaves it out.
// NOT thread-safe: its owner's event loop has it (through LogStore).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace clusterd {

class LogPacks {
 public:
  // A pack past rotate_bytes is closed and the next one begun.
  explicit LogPacks(std::string dir, int64_t rotate_bytes = int64_t{64} << 20);
  ~LogPacks();
  LogPacks(const LogPacks&) = delete;
  LogPacks& operator=(const LogPacks&) = delete;

  // Indexes every whole record of the packs in dir (none there is fine).
  // Call once, before anything else; a pack that cannot be read is named in
  // the error and the others are still indexed.
  Status Load();

  bool Has(const std::string& key) const { return logs_.count(key) > 0; }
  // The key's bytes so far; 0 for a key with none.
  int64_t Size(const std::string& key) const;
  // Either the whole record is in the pack or none of it (a failed write is
  // cut off again), so the next record is never read out of step.
  Status Append(const std::string& key, std::string_view data);
  // Up to n bytes of the key's log from offset, 0 <= offset <= Size(key).
  Result<std::string> Read(const std::string& key, int64_t offset, int64_t n) const;
  // The key's log lives elsewhere from now on, or nowhere: Has() is false,
  // and a pack this store began (other than the one it writes) left with
  // no bytes of a key still known is deleted. Dead bytes in a pack that
  // still holds live ones stay until those go too.
  void Forget(const std::string& key);
  // This store alone writes its folder (the head's, whose state folder is
  // locked): the packs Load() found may be deleted too. Without it they
  // never are, as another store (an agent of the same session) may still
  // be appending to one.
  void OwnLoadedPacks() { own_loaded_ = true; }
  // Pack files on disk now (for tests and the benchmarks).
  size_t packs() const { return live_bytes_.size(); }
  // Their bytes on disk, dead records included: what the packs cost the disk.
  int64_t DiskBytes() const { return disk_bytes_; }
  // Keys with bytes here.
  std::vector<std::string> Keys() const;

 private:
  struct Piece {
    int64_t offset;  // of the data, in its pack
    uint32_t pack;
    uint32_t length;
  };
  struct Log {
    std::vector<Piece> pieces;
    int64_t size = 0;
  };
  std::string PathOf(uint32_t pack) const;
  Status LoadPack(uint32_t pack);
  Status OpenNextPack();
  Result<int> ReadFdOf(uint32_t pack) const;
  // Deletes a pack no key needs any more, unless appends go to it.
  void DropIfDead(uint32_t pack);

  std::string dir_;
  int64_t rotate_bytes_;
  std::unordered_map<std::string, Log> logs_;
  uint32_t next_pack_ = 0;  // the number the next pack begun gets
  uint32_t writing_ = 0;    // the pack appends go to, while write_fd_ is open
  int write_fd_ = -1;
  bool writing_begun_ = false;  // writing_ is a pack this object began
  int64_t write_end_ = 0;
  mutable std::map<uint32_t, int> read_fds_;
  std::map<uint32_t, int64_t> live_bytes_;  // every pack on disk -> the bytes of known keys in it
  std::map<uint32_t, int64_t> pack_bytes_;  // every pack on disk -> its size
  int64_t disk_bytes_ = 0;                  // the sum of pack_bytes_
  std::set<uint32_t> began_;                // packs this store began
  bool own_loaded_ = false;
};

}  // namespace clusterd
