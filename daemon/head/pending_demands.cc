#include "daemon/head/pending_demands.h"

#include <algorithm>

#include <fmt/format.h>

#include "daemon/head/job_shape.h"

namespace clusterd {

void PendingDemands::Update(TrackedJob& job) {
  const JobState state = job.info.state();
  const bool waiting = !job.active && (state == PENDING || state == INFEASIBLE || state == RESTARTING);
  std::string key = waiting ? ShapeKey(job.info.spec(), /*placement=*/false, state == INFEASIBLE) : "";
  if (key == job.demand) return;
  if (!job.demand.empty()) {
    auto it = demands_.find(job.demand);
    if (it != demands_.end()) {
      it->second.erase(job.seq);
      if (it->second.empty()) demands_.erase(it);
    }
  }
  if (!key.empty()) demands_[key].insert(job.seq);
  job.demand = std::move(key);
}

std::vector<PendingDemand> PendingDemands::Summary(const std::function<void(JobInfo*)>& explain) const {
  // Shapes in the order their first waiting job was submitted.
  std::vector<std::pair<uint64_t, const std::set<uint64_t>*>> shapes;
  shapes.reserve(demands_.size());
  for (const auto& [key, seqs] : demands_) shapes.push_back({*seqs.begin(), &seqs});
  const size_t listed = std::min<size_t>(shapes.size(), kShapes - (shapes.size() > kShapes ? 1 : 0));
  std::partial_sort(shapes.begin(), shapes.begin() + static_cast<std::ptrdiff_t>(listed), shapes.end());
  std::vector<PendingDemand> out;
  for (size_t i = 0; i < listed; ++i) {
    const TrackedJob& first = *table_->unfinished().at(shapes[i].first);
    const JobInfo& info = first.info;
    PendingDemand& demand = out.emplace_back();
    demand.set_job_id(info.job_id());
    demand.set_job_name(info.spec().name());
    *demand.mutable_per_worker() = info.spec().resources_per_worker();
    demand.set_num_workers(info.spec().num_workers());
    demand.set_infeasible(info.state() == INFEASIBLE);
    demand.set_more_like_it(static_cast<int32_t>(shapes[i].second->size() - 1));
    JobInfo shown;
    shown.set_job_id(info.job_id());
    shown.set_state(info.state());
    shown.set_reason(info.reason());
    explain(&shown);
    demand.set_reason(shown.reason());
  }
  if (listed < shapes.size()) {
    int64_t other_jobs = 0;
    for (size_t i = listed; i < shapes.size(); ++i) other_jobs += static_cast<int64_t>(shapes[i].second->size());
    const size_t other_shapes = shapes.size() - listed;
    PendingDemand& rest = out.emplace_back();
    rest.set_num_workers(0);
    rest.set_more_like_it(static_cast<int32_t>(other_jobs - 1));
    rest.set_reason(fmt::format("{} more job{} of {} other shape{}, not listed", other_jobs,
                                other_jobs == 1 ? "" : "s", other_shapes, other_shapes == 1 ? "" : "s"));
  }
  return out;
}

}  // namespace clusterd
