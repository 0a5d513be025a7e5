#include "daemon/head/job_queue.h"

#include <limits>
#include <tuple>

namespace clusterd {

void JobQueue::Insert(const std::string& job_id, bool front) {
  if (entries_.count(job_id)) return;
  // An id the table does not hold goes last, to be dropped when met.
  QueueKey key = key_ ? key_(job_id).value_or(QueueKey{std::numeric_limits<int>::min(), "",
                                                       std::numeric_limits<uint64_t>::max()})
                      : QueueKey{0, "", front ? next_front_-- : next_back_++};
  levels_[key.priority][key.user].emplace(key.seq, job_id);
  entries_.emplace(job_id, std::move(key));
  ++version_;
  front_.reset();
  if (pushed_.size() < kPushedKept) {
    pushed_.push_back(job_id);
  } else {
    pushed_overflow_ = true;
  }
}

std::optional<std::vector<std::string>> JobQueue::TakePushed() {
  std::optional<std::vector<std::string>> taken;
  if (!pushed_overflow_) taken = std::move(pushed_);
  pushed_.clear();
  pushed_overflow_ = false;
  return taken;
}

void JobQueue::Remove(const std::string& job_id) {
  auto entry = entries_.find(job_id);
  if (entry == entries_.end()) return;
  const QueueKey& key = entry->second;
  auto level = levels_.find(key.priority);
  auto user = level->second.find(key.user);
  user->second.erase(key.seq);
  if (user->second.empty()) level->second.erase(user);
  if (level->second.empty()) levels_.erase(level);
  entries_.erase(entry);
  ++version_;
  front_.reset();
}

const std::string& JobQueue::front() const {
  const UserFifos& users = levels_.begin()->second;
  if (front_) {
    auto user = users.find(front_->first);
    if (user != users.end() && user->second.begin()->first == front_->second) return user->second.begin()->second;
  }
  const std::string* best_user = nullptr;
  const std::map<uint64_t, std::string>* best = nullptr;
  FairShareStanding best_standing;
  for (const auto& [user, fifo] : users) {
    FairShareStanding standing = StandingOf(user);
    if (!best || standing < best_standing ||
        (!(best_standing < standing) && fifo.begin()->first < best->begin()->first)) {
      best_user = &user;
      best = &fifo;
      best_standing = standing;
    }
  }
  front_ = {*best_user, best->begin()->first};
  return best->begin()->second;
}

void JobQueue::pop_front() { Remove(std::string(front())); }

bool JobQueue::Walk::Later::operator()(const Cursor& a, const Cursor& b) const {
  if (b.standing < a.standing) return true;
  if (a.standing < b.standing) return false;
  return a.at->first > b.at->first;
}

JobQueue::Walk::Walk(const JobQueue* queue)
    : queue_(queue), version_(queue->version_), level_(queue->levels_.begin()) {
  EnterLevel();
}

void JobQueue::Walk::EnterLevel() {
  if (level_ == queue_->levels_.end()) return;
  for (const auto& [user, fifo] : level_->second) users_.push({queue_->StandingOf(user), fifo.begin(), fifo.end()});
}

const std::string* JobQueue::Walk::Next() {
  if (queue_->version_ != version_) return nullptr;
  if (last_) {
    if (last_->at != last_->end) users_.push(*last_);
    last_.reset();
  }
  while (users_.empty()) {
    if (level_ == queue_->levels_.end()) return nullptr;
    ++level_;
    EnterLevel();
  }
  Cursor cursor = users_.top();
  users_.pop();
  const std::string* id = &cursor.at->second;
  ++cursor.at;
  if (queue_->load_) {
    auto [gpus, cpus] = queue_->load_(*id);
    cursor.standing.gpus_now += gpus;
    cursor.standing.cpus_now += cpus;
  }
  last_ = cursor;
  return id;
}

}  // namespace clusterd
