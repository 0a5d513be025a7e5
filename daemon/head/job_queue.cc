#include "daemon/head/job_queue.h"

namespace clusterd {

void JobQueue::push_back(const std::string& job_id) {
  order_.push_back(job_id);
  ++entries_[job_id];
}

void JobQueue::push_front(const std::string& job_id) {
  order_.push_front(job_id);
  ++entries_[job_id];
}

void JobQueue::pop_front() {
  auto it = entries_.find(order_.front());
  if (it != entries_.end() && --it->second <= 0) entries_.erase(it);
  order_.pop_front();
}

}  // namespace clusterd
