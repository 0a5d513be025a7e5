#include "daemon/store/blob_room.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace clusterd {

std::string Mib(int64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

Status CheckAnnounced(const BlobIndex& index, int64_t reserved, int64_t cap, int64_t bytes, const std::string& what) {
  if (cap <= 0) return Status::Ok();
  if (bytes > cap) {
    return Status::ResourceExhausted(
        fmt::format("{} of {} is more than the head's whole store may hold ({})", what, Mib(bytes), Mib(cap)));
  }
  if (index.used_bytes() + reserved + bytes <= cap) return Status::Ok();  // fits without a scan
  // Only live jobs' blobs are certain to stay; the rest could make room
  // once the bytes arrive, so nothing is evicted or reserved for a promise.
  const int64_t pinned = index.HardPinnedBytes();
  if (pinned + bytes <= cap) return Status::Ok();
  return Status::ResourceExhausted(
      fmt::format("the head's store cannot take {} of {}: {} of its {} cap are held by live jobs", what, Mib(bytes),
                  Mib(pinned), Mib(cap)));
}

std::vector<Eviction> EvictionOrder(const BlobIndex& index, int64_t fresh_since) {
  std::set<std::string> held;  // by any owner, hard or soft
  for (const auto& [owner, pins] : index.owners()) held.insert(pins.ids.begin(), pins.ids.end());
  // The blobs nobody holds, least recently used first: those unused for a
  // while first, then finished jobs' data, and only then the fresh ones. A
  // tree's pieces are held by nobody until its manifest is stored and
  // pinned: an upload into a full store must not evict its own first
  // pieces before an older finished job's outputs.
  std::vector<std::pair<int64_t, std::string>> loose;  // (last used, id)
  for (const auto& [id, blob] : index.blobs()) {
    if (!held.count(id)) loose.push_back({blob.last_used, id});
  }
  std::sort(loose.begin(), loose.end());
  auto stale_end = std::find_if(loose.begin(), loose.end(), [&](const auto& blob) { return blob.first >= fresh_since; });
  std::vector<Eviction> order;
  for (auto it = loose.begin(); it != stale_end; ++it) {
    order.push_back({Eviction::Kind::kBlob, it->second, "least recently used"});
  }
  std::vector<std::pair<int64_t, std::string>> soft;  // (last used, owner)
  for (const auto& [owner, pins] : index.owners()) {
    if (pins.soft) soft.push_back({pins.last_used, owner});
  }
  std::sort(soft.begin(), soft.end());
  for (const auto& [used_at, owner] : soft) order.push_back({Eviction::Kind::kOwner, owner, "its owner let go"});
  for (auto it = stale_end; it != loose.end(); ++it) {
    order.push_back({Eviction::Kind::kBlob, it->second, "least recently used, though fresh"});
  }
  return order;
}

Status MakeRoom(const BlobIndex& index, int64_t reserved, int64_t cap, int64_t bytes, int64_t fresh_since,
                const Evictor& evictor) {
  auto fits = [&] { return cap <= 0 || index.used_bytes() + reserved + bytes <= cap; };
  if (fits()) return Status::Ok();
  const int64_t pinned = index.HardPinnedBytes();
  if (pinned + reserved + bytes > cap) {
    return Status::ResourceExhausted(fmt::format(
        "the head's store is full: no room for {} more, as {} of its {} cap are held by live jobs and {} by uploads "
        "under way",
        Mib(bytes), Mib(pinned), Mib(cap), Mib(reserved)));
  }
  for (const Eviction& next : EvictionOrder(index, fresh_since)) {
    if (fits()) return Status::Ok();
    // A blob of an owner released before is gone already: evicting it does nothing.
    if (next.kind == Eviction::Kind::kBlob) {
      evictor.evict_blob(next.name, next.why);
    } else {
      evictor.release_owner(next.name);
    }
  }
  if (fits()) return Status::Ok();
  // Only a file that would not be deleted gets here.
  return Status::ResourceExhausted(fmt::format(
      "the head's store cannot make room for {}: {} of its {} cap are held by live jobs or uploads under way",
      Mib(bytes), Mib(index.used_bytes() + reserved), Mib(cap)));
}

int64_t RoomAhead(int64_t written, int64_t size, int64_t end, int64_t spare) {
  // Evicting scans the store: room for more than this chunk, bounded by
  // what the write already proved and by what it announced.
  int64_t ahead = std::min(written / 4, kRoomAheadBytes);
  if (size >= 0) ahead = std::min(ahead, size - end);
  return std::max<int64_t>(0, std::min(ahead, spare));
}

}  // namespace clusterd
