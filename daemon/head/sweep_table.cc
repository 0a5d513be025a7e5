#include "daemon/head/sweep_table.h"

#include <algorithm>

#include <fmt/format.h>

namespace clusterd {

SweepRun& SweepTable::Add(SweepRun run) {
  const std::string id = run.info.sweep_id();
  order_.push_back(id);
  return runs_.emplace(id, std::move(run)).first->second;
}

void SweepTable::Erase(const std::string& sweep_id) {
  if (runs_.erase(sweep_id) == 0) return;
  order_.erase(std::find(order_.begin(), order_.end(), sweep_id));
}

SweepRun* SweepTable::Find(const std::string& sweep_id) {
  auto it = runs_.find(sweep_id);
  return it == runs_.end() ? nullptr : &it->second;
}

std::vector<const SweepInfo*> SweepTable::Records() const {
  std::vector<const SweepInfo*> records;
  records.reserve(order_.size());
  for (const std::string& id : order_) records.push_back(&runs_.at(id).info);
  return records;
}

SweepInfo SweepTable::Shown(const SweepInfo& info) const {
  SweepInfo shown = info;
  for (TrialInfo& trial : *shown.mutable_trials()) {
    const JobInfo* job = trial.job_id().empty() ? nullptr : jobs_->InfoOf(trial.job_id());
    if (job) trial.set_job_state(job->state());
  }
  return shown;
}

Result<SweepInfo> SweepTable::Get(const std::string& sweep_id) const {
  auto it = runs_.find(sweep_id);
  if (it == runs_.end()) return Status::NotFound(fmt::format("no sweep '{}'", sweep_id));
  return Shown(it->second.info);
}

std::vector<SweepInfo> SweepTable::List() const {
  std::vector<SweepInfo> out;
  for (const auto& id : order_) out.push_back(Shown(runs_.at(id).info));
  return out;
}

Result<ListSweepsReply> SweepTable::ListPage(const ListSweepsRequest& request) const {
  auto from = order_.begin();
  if (!request.page_token().empty()) {
    from = std::find(order_.begin(), order_.end(), request.page_token());
    if (from == order_.end()) {
      return Status::InvalidArgument(fmt::format("'{}' is not a page token of ListSweeps", request.page_token()));
    }
    ++from;
  }
  const int size = request.page_size() <= 0 ? kSweepsPage : std::min(request.page_size(), kMaxSweepsPage);
  ListSweepsReply reply;
  size_t bytes = 0;
  for (auto it = from; it != order_.end(); ++it) {
    const SweepInfo info = Shown(runs_.at(*it).info);
    const size_t more = info.ByteSizeLong();
    if (reply.sweeps_size() >= size || (reply.sweeps_size() > 0 && bytes + more > JobManager::kMaxReplyBytes)) {
      reply.set_next_page_token(reply.sweeps().rbegin()->sweep_id());
      break;
    }
    *reply.add_sweeps() = info;
    bytes += more;
  }
  return reply;
}

}  // namespace clusterd
