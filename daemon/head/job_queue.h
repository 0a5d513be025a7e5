// The head's FIFO of job ids waiting to be placed, with an O(1) answer to
// "is this job in it?". The queue holds ids, not jobs: an entry may outlive
// its job's wait (the job started, was stopped or deleted elsewhere) and is
// dropped when it reaches the front. So membership is counted per id, and
// an id may be in it more than once (a retry put at the front while an old
// entry still waits further back).
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>

namespace clusterd {

class JobQueue {
 public:
  // The reason a job waiting in the queue has on its record. What it waits
  // for is shown only (JobPlacement::ExplainWait): the journal keeps
  // "queued", so that the queue moving writes nothing.
  static constexpr const char* kReason = "queued";

  void push_back(const std::string& job_id);
  void push_front(const std::string& job_id);
  // REQUIRES: !empty().
  void pop_front();
  const std::string& front() const { return order_.front(); }
  bool empty() const { return order_.empty(); }
  size_t size() const { return order_.size(); }
  // Whether any entry names the job: a hash lookup, not a walk of the queue.
  bool Contains(const std::string& job_id) const { return entries_.count(job_id) > 0; }

 private:
  std::deque<std::string> order_;
  std::unordered_map<std::string, int> entries_;  // id -> its entries in order_ (absent: none)
};

}  // namespace clusterd
