#include "daemon/head/job_queries.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include <fmt/format.h>

namespace clusterd {

Result<JobInfo> JobQueries::Get(const std::string& job_id) const {
  const TrackedJob* job = table_->Find(job_id);
  if (!job) return retention_->UnknownJob(job_id);
  JobInfo shown = job->info;
  placement_->ExplainWait(&shown);
  return shown;
}

std::vector<std::pair<std::string, MetricRecord>> JobQueries::LatestMetrics() const {
  std::vector<std::pair<std::string, MetricRecord>> out;
  for (const auto& id : table_->order()) {
    const TrackedJob& job = table_->At(id);
    if (!job.metrics.empty()) out.push_back({id, job.metrics.back()});
  }
  return out;
}

namespace {

int PageSize(int asked, int default_size, int max_size) {
  return asked <= 0 ? default_size : std::min(asked, max_size);
}

}  // namespace

std::vector<JobInfo> JobQueries::List() const {
  std::vector<JobInfo> out;
  for (const auto& id : table_->order()) out.push_back(table_->At(id).info);
  return out;
}

JobQueries::JobOrder::const_iterator JobQueries::PageStart(const std::string& token, int last) const {
  if (const TrackedJob* token_job = table_->Find(token)) return table_->FirstFrom(token_job->seq + 1);
  // Deleted since: the page goes on with the first job submitted after it.
  const JobOrder& order = table_->order();
  return std::find_if(order.begin(), order.end(),
                      [&](const std::string& id) { return JobTable::JobNumber(id) > last; });
}

ArrayStates JobQueries::CountArray(JobOrder::const_iterator first, JobOrder::const_iterator* last) const {
  ArrayStates counted;
  const std::string& array_id = table_->At(*first).info.spec().array_id();
  counted.set_array_id(array_id);
  *last = first;
  const JobArrays::Tally* tally = arrays_->TallyOf(array_id);
  if (!tally) return counted;  // cannot be: `first` is one of its jobs
  for (const auto& [state, count] : tally->by_state) {
    JobStateCount* entry = counted.add_counts();
    entry->set_state(state);
    entry->set_count(count);
  }
  // Its jobs are neighbours: the last one still here is just before the
  // first job made after the array's last.
  *last = std::prev(table_->FirstFrom(tally->last_seq + 1));
  return counted;
}

JobTally JobQueries::Tally() const {
  JobTally tally;
  table_->ForEach([&](const TrackedJob& job) { tally.Add(job.info); });
  return tally;
}

Result<ListJobsReply> JobQueries::ListPage(const ListJobsRequest& request) const {
  auto from = table_->order().begin();
  if (!request.page_token().empty()) {
    // The token is the last job of the previous page.
    int last = JobTable::JobNumber(request.page_token());
    if (last < 0) return Status::InvalidArgument(fmt::format("'{}' is not a page token of ListJobs", request.page_token()));
    from = PageStart(request.page_token(), last);
  }
  const std::string& array_id = request.array_id();
  if (!array_id.empty()) {
    // An array is named after its first job, which retention may have
    // deleted before the rest: the tally knows where the others are.
    const JobArrays::Tally* tally = arrays_->TallyOf(array_id);
    if (!tally) return Status::NotFound(fmt::format("no array '{}'", array_id));
    if (request.page_token().empty()) from = table_->FirstFrom(tally->first_seq);
  }
  const bool grouped = request.group_arrays();
  const int size = PageSize(request.page_size(), kJobsPage, kMaxJobsPage);
  ListJobsReply reply;
  size_t bytes = 0;
  bool in_array = false;
  // Grouped: the array of the job before `it` ("" for none).
  const std::string* previous_array = nullptr;
  if (grouped && from != table_->order().begin()) {
    previous_array = &table_->At(*std::prev(from)).info.spec().array_id();
  }
  for (auto it = from; it != table_->order().end(); ++it) {
    const JobInfo& info = table_->At(*it).info;
    const std::string& member_of = info.spec().array_id();
    // An array's jobs are made by one call, so they are neighbours in
    // submission order: past the asked array's last one, none of it follows.
    if (!array_id.empty()) {
      if (member_of != array_id) {
        if (in_array) break;
        continue;
      }
      in_array = true;
    }
    // Grouped, all but an array's first job still there are counted with it.
    const bool array_head = grouped && !member_of.empty();
    const bool counted_already = array_head && previous_array && *previous_array == member_of;
    previous_array = &member_of;
    if (counted_already) continue;
    JobInfo brief;
    if (request.states_only()) {
      brief.set_job_id(info.job_id());
      brief.set_state(info.state());
    }
    const JobInfo& listed = request.states_only() ? brief : info;
    const size_t more = listed.ByteSizeLong();
    if (reply.jobs_size() >= size || (reply.jobs_size() > 0 && bytes + more > kMaxReplyBytes)) {
      reply.set_next_page_token(reply.jobs().rbegin()->job_id());
      break;
    }
    JobInfo* added = reply.add_jobs();
    *added = listed;
    if (!request.states_only()) placement_->ExplainWait(added);
    bytes += added->reason().size() == listed.reason().size() ? more : added->ByteSizeLong();
    if (array_head) *reply.add_arrays() = CountArray(it, &it);  // and on past its jobs
  }
  return reply;
}

RunningJobsReply JobQueries::RunningJobs(const RunningJobsRequest& request) const {
  const int size = PageSize(request.max_jobs(), kJobsPage, kMaxJobsPage);
  RunningJobsReply reply;
  size_t bytes = 0;
  bool full = false;
  for (const auto& [seq, job] : table_->unfinished()) {
    const JobState state = job->info.state();
    if (state != RUNNING && state != RESTARTING) continue;
    reply.set_running_jobs(reply.running_jobs() + 1);
    if (full) continue;
    RunningJobRecord shown;
    *shown.mutable_job() = job->info;
    if (!job->metrics.empty()) *shown.mutable_latest() = job->metrics.back();
    const size_t more = shown.ByteSizeLong();
    if (reply.jobs_size() >= size || (reply.jobs_size() > 0 && bytes + more > kMaxReplyBytes)) {
      full = true;
      continue;
    }
    bytes += more;
    *reply.add_jobs() = std::move(shown);
  }
  return reply;
}

Result<MetricsReply> JobQueries::Metrics(const JobRequest& request) const {
  const TrackedJob* job = table_->Find(request.job_id());
  if (!job) return retention_->UnknownJob(request.job_id());
  if (request.latest_only()) {
    MetricsReply latest;
    if (!job->metrics.empty()) *latest.add_records() = job->metrics.back();
    return latest;
  }
  // The token is the index of the first record of the page: a job's
  // records are only ever appended to.
  size_t first = 0;
  if (!request.page_token().empty()) {
    long long index = -1;
    char rest = 0;
    if (sscanf(request.page_token().c_str(), "%lld%c", &index, &rest) != 1 || index < 0 ||
        static_cast<unsigned long long>(index) > job->metrics.size()) {
      return Status::InvalidArgument(fmt::format("'{}' is not a page token of job {}'s metrics ({} records)",
                                                 request.page_token(), request.job_id(), job->metrics.size()));
    }
    first = static_cast<size_t>(index);
  }
  const size_t size = static_cast<size_t>(PageSize(request.page_size(), kMetricsPage, kMetricsPage));
  MetricsReply reply;
  size_t bytes = 0;
  for (size_t i = first; i < job->metrics.size(); ++i) {
    const size_t more = job->metrics[i].ByteSizeLong();
    if (static_cast<size_t>(reply.records_size()) >= size || (reply.records_size() > 0 && bytes + more > kMaxReplyBytes)) {
      reply.set_next_page_token(std::to_string(i));
      break;
    }
    *reply.add_records() = job->metrics[i];
    bytes += more;
  }
  return reply;
}

Result<LogsReply> JobQueries::Logs(const LogsRequest& request) const {
  const TrackedJob* job = table_->Find(request.job_id());
  if (!job) return retention_->UnknownJob(request.job_id());
  LogsReply reply;
  reply.set_state(job->info.state());
  reply.set_attempts(AttemptCount(job->info));
  const int workers = job->info.spec().num_workers();
  if (request.rank() >= workers) {
    return Status::InvalidArgument(fmt::format("job {} has ranks 0..{}, not {}", request.job_id(), workers - 1,
                                               request.rank()));
  }
  // Offsets come from the client: every one is checked, also those of
  // ranks not asked for this time.
  for (const auto& [rank, offset] : request.offsets()) {
    if (rank < 0 || rank >= workers) {
      return Status::InvalidArgument(fmt::format("job {} has ranks 0..{}: an offset for rank {} makes no sense",
                                                 request.job_id(), workers - 1, rank));
    }
    if (offset < 0) {
      return Status::InvalidArgument(fmt::format("offset {} into the log of {} rank {} is negative", offset,
                                                 request.job_id(), rank));
    }
  }
  int64_t budget = request.max_bytes() <= 0 ? kLogsReplyBytes : std::min<int64_t>(request.max_bytes(), kMaxReplyBytes);
  // Ranks take turns from start_rank, so that a chatty rank cannot keep
  // the others' output from ever being read.
  const int start = request.start_rank() >= 0 && request.start_rank() < workers ? request.start_rank() : 0;
  reply.set_next_rank(start);
  for (int turn = 0; turn < workers; ++turn) {
    const int rank = (start + turn) % workers;
    if (request.rank() >= 0 && rank != request.rank()) continue;
    if (budget <= 0) {
      reply.set_next_rank(rank);  // the budget ran out before its turn
      break;
    }
    auto seen = request.offsets().find(rank);
    int64_t offset = seen == request.offsets().end() ? 0 : seen->second;
    int64_t end = offset;
    ASSIGN_OR_RETURN(std::string data, logs_->Read(job->info.job_id(), rank, offset, budget, &end));
    if (data.empty()) continue;
    budget -= static_cast<int64_t>(data.size());
    LogChunk* chunk = reply.add_chunks();
    chunk->set_rank(rank);
    chunk->set_data(std::move(data));
    chunk->set_end_offset(end);
  }
  return reply;
}

}  // namespace clusterd
