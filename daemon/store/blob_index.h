// What the head's store holds and who holds it: each blob's size and last
// use, and each owner's blobs. An owner is hard (a live job: its blobs are
// never evicted) until made soft (a finished job: its blobs may go, all at
// once, when room is needed). Times are ns since the epoch, from the
// store's clock. In memory only: the store keeps it under its lock and
// does the file work. NOT thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace clusterd {

class BlobIndex {
 public:
  struct Blob {
    int64_t size = 0;
    int64_t last_used = 0;
  };
  struct Owner {
    std::set<std::string> ids;
    bool soft = false;
    int64_t last_used = 0;
  };

  // A blob present from now on (again: its size and use are replaced).
  void Add(const std::string& id, int64_t size, int64_t last_used);
  // Forgets the blob; its owners still name it.
  void Remove(const std::string& id);
  bool Has(const std::string& id) const { return blobs_.count(id) > 0; }
  // Null when absent.
  Blob* Find(const std::string& id);
  const Blob* Find(const std::string& id) const;

  // `owner` holds `ids` (present or not) from now on; pinning is a use of
  // the owner and of each present blob.
  void Pin(const std::string& owner, const std::vector<std::string>& ids, int64_t now);
  void MakeSoft(const std::string& owner, int64_t now);
  // Forgets the owner; the blobs it held (none for an unknown owner).
  std::set<std::string> DropOwner(const std::string& owner);
  bool IsHeld(const std::string& id) const;
  std::vector<std::string> Holders(const std::string& id) const;
  // Present blobs held by hard owners, each counted once.
  int64_t HardPinnedBytes() const;
  // Present blobs nobody holds count as used longest ago, so that they go
  // first when room is needed.
  void MarkUnwanted(const std::vector<std::string>& ids);

  const std::map<std::string, Blob>& blobs() const { return blobs_; }
  const std::map<std::string, Owner>& owners() const { return owners_; }
  int64_t used_bytes() const { return used_; }

 private:
  std::map<std::string, Blob> blobs_;
  std::map<std::string, Owner> owners_;
  int64_t used_ = 0;  // present blobs' bytes
};

}  // namespace clusterd
