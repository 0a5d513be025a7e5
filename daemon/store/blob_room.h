// Room in the head's store, as a policy over its index: whether a write may
// start, when evicting cannot help, and what goes first when room is made.
//
// Room is taken as bytes arrive, never on an upload's word: a size
// announced at a write's start is only checked against what the cap leaves
// beside live jobs' blobs (an announced 20 GiB that never comes evicts
// nothing). A growth that does not fit evicts just enough, in this order:
// blobs nobody holds and nobody used for the upload grace
// (store_upload_grace_s), least recently used first; then soft owners (a finished job's outputs and checkpoints)
// whole, the owner used longest ago first; then the fresh blobs nobody
// holds yet (an upload's pieces before its manifest is pinned). Hard owners
// (live jobs) are never touched. Pure functions; the store applies them
// under its lock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/blob_index.h"

namespace clusterd {

// A write that must evict grows its room by what arrived plus a quarter
// of what it wrote before, at most this much, and never past its announced
// size: a few dozen scans of the store for a large upload into a full one,
// not one per chunk, while the bytes evicted stay within what arrived and a
// quarter more (and one owner's worth: owners go whole). Not a config
// key: it sets only how often a large write scans the store and how far
// ahead of its bytes it evicts, bounded by what the write has proved;
// neither depends on the cluster or its use.
inline constexpr int64_t kRoomAheadBytes = 64LL << 20;

// "12.3 MiB", as the store's messages give sizes.
std::string Mib(int64_t bytes);

// A write of `bytes` (`what`: "blob <id>" or "an upload") may start unless
// they are more than the cap (`cap` > 0), or than the cap leaves beside
// live jobs' blobs: RESOURCE_EXHAUSTED saying which. `reserved`: the bytes
// of writes under way.
Status CheckAnnounced(const BlobIndex& index, int64_t reserved, int64_t cap, int64_t bytes, const std::string& what);

struct Eviction {
  enum class Kind { kBlob, kOwner };
  Kind kind;
  std::string name;  // a blob's id or an owner
  const char* why;   // for the store's log
};
// Everything that may go, first to go first (see above). Blobs last used
// at `fresh_since` or later are fresh.
std::vector<Eviction> EvictionOrder(const BlobIndex& index, int64_t fresh_since);

// What making room does to the store: deletes an unheld blob (which may
// stay, its file not deleted), or lets go of a soft owner whole.
struct Evictor {
  std::function<void(const std::string& id, const char* why)> evict_blob;
  std::function<void(const std::string& owner)> release_owner;
};
// Evicts in EvictionOrder until `bytes` more fit beside the index's blobs
// and the `reserved` bytes of writes under way, or says why not
// (RESOURCE_EXHAUSTED). Evicts nothing when even evicting everything that
// may go would not do: a write that fails must not have emptied the store.
Status MakeRoom(const BlobIndex& index, int64_t reserved, int64_t cap, int64_t bytes, int64_t fresh_since,
                const Evictor& evictor);

// The room a write that must evict takes beyond the `need` bytes arriving:
// see kRoomAheadBytes. `written`: its bytes so far; `size`: announced (-1:
// named at its end); `end`: its size once these bytes are written;
// `spare`: what the cap leaves beside hard owners, writes and `need`.
int64_t RoomAhead(int64_t written, int64_t size, int64_t end, int64_t spare);

}  // namespace clusterd
