#include "daemon/store/blob_index.h"

namespace clusterd {

void BlobIndex::Add(const std::string& id, int64_t size, int64_t last_used) {
  Remove(id);
  blobs_[id] = Blob{size, last_used};
  used_ += size;
}

void BlobIndex::Remove(const std::string& id) {
  auto it = blobs_.find(id);
  if (it == blobs_.end()) return;
  used_ -= it->second.size;
  blobs_.erase(it);
}

BlobIndex::Blob* BlobIndex::Find(const std::string& id) {
  auto it = blobs_.find(id);
  return it == blobs_.end() ? nullptr : &it->second;
}

const BlobIndex::Blob* BlobIndex::Find(const std::string& id) const {
  auto it = blobs_.find(id);
  return it == blobs_.end() ? nullptr : &it->second;
}

void BlobIndex::Pin(const std::string& owner, const std::vector<std::string>& ids, int64_t now) {
  Owner& held = owners_[owner];
  held.last_used = now;
  for (const std::string& id : ids) {
    held.ids.insert(id);
    if (Blob* blob = Find(id)) blob->last_used = now;
  }
}

void BlobIndex::MakeSoft(const std::string& owner, int64_t now) {
  auto it = owners_.find(owner);
  if (it == owners_.end()) return;
  it->second.soft = true;
  it->second.last_used = now;
}

std::set<std::string> BlobIndex::DropOwner(const std::string& owner) {
  auto it = owners_.find(owner);
  if (it == owners_.end()) return {};
  std::set<std::string> ids = std::move(it->second.ids);
  owners_.erase(it);
  return ids;
}

bool BlobIndex::IsHeld(const std::string& id) const {
  for (const auto& [owner, held] : owners_) {
    if (held.ids.count(id)) return true;
  }
  return false;
}

std::vector<std::string> BlobIndex::Holders(const std::string& id) const {
  std::vector<std::string> holders;
  for (const auto& [owner, held] : owners_) {
    if (held.ids.count(id)) holders.push_back(owner);
  }
  return holders;
}

int64_t BlobIndex::HardPinnedBytes() const {
  std::set<std::string> held;
  for (const auto& [owner, pins] : owners_) {
    if (!pins.soft) held.insert(pins.ids.begin(), pins.ids.end());
  }
  int64_t bytes = 0;
  for (const std::string& id : held) {
    if (const Blob* blob = Find(id)) bytes += blob->size;
  }
  return bytes;
}

void BlobIndex::MarkUnwanted(const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    Blob* blob = Find(id);
    if (blob && !IsHeld(id)) blob->last_used = 0;
  }
}

}  // namespace clusterd
