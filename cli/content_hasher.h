// Hashes the contents of a package's files on a thread of its own, from the
// very buffers the packer read them into (no second read), so that the
// packing thread only reads, archives and hashes the archive. The hashes
// feed the hash cache and the manifest, not the archive (package_builder.h).
// Not thread-safe: one packing thread calls it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/sha256.h"
#include "common/storage/tree_entry.h"

namespace clusterd {

class ContentHasher {
 public:
  // Keeps `buffers` buffers of `buffer_bytes` in flight; starts the thread.
  ContentHasher(size_t buffers, size_t buffer_bytes);
  // Stops the thread; files not ended get no hash.
  ~ContentHasher();
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;

  // Takes the first `size` bytes of `*buffer` (of buffer_bytes) as the next
  // piece of `file`'s content, and puts a free buffer in its place, waiting
  // while all are in use. REQUIRES: the pieces of one file come together,
  // between its first Add and its End.
  void Add(TreeEntry* file, std::vector<char>* buffer, size_t size);
  // All of `file` was added and its read checked out: its sha256 is set
  // once the hasher gets there.
  void End(TreeEntry* file);
  // Returns once every file ended so far has its sha256.
  void Wait();

 private:
  struct Task {
    TreeEntry* file;
    std::vector<char> buffer;  // empty for End
    size_t size;
  };
  void Run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Task> tasks_;
  std::vector<std::vector<char>> free_;
  bool busy_ = false;  // the thread holds a task
  bool stop_ = false;
  std::unique_ptr<Sha256> current_;  // the file being hashed; the thread's own
  std::thread thread_;
};

}  // namespace clusterd
