// JobManager, part five: what clients read, in bounded replies. Jobs and
// metrics come in pages (a count and a byte budget, always one item at
// least), logs in a byte budget shared by the ranks, which take turns.
// Every token and offset a client sends is checked, never trusted.
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "daemon/head/job_manager.h"

namespace clusterd {

namespace {

// The number of "job-0042" or "job-0042-<cluster id>" (NewJobId's two
// forms), or -1.
int JobNumber(const std::string& job_id) {
  int number = -1, end = 0;
  if (sscanf(job_id.c_str(), "job-%d%n", &number, &end) != 1 || number < 0) return -1;
  const size_t after = static_cast<size_t>(end);
  if (after == job_id.size() || (job_id[after] == '-' && after + 1 < job_id.size())) return number;
  return -1;
}

int PageSize(int asked, int default_size, int max_size) {
  return asked <= 0 ? default_size : std::min(asked, max_size);
}

}  // namespace

std::vector<JobInfo> JobManager::List() const {
  std::vector<JobInfo> out;
  for (const auto& id : order_) out.push_back(jobs_.at(id).info);
  return out;
}

Result<ListJobsReply> JobManager::ListPage(const ListJobsRequest& request) const {
  auto from = order_.begin();
  if (!request.page_token().empty()) {
    // The token is the last job of the previous page. Deleted since, the
    // page goes on with the first job submitted after it.
    int last = JobNumber(request.page_token());
    if (last < 0) return Status::InvalidArgument(fmt::format("'{}' is not a page token of ListJobs", request.page_token()));
    from = std::find(order_.begin(), order_.end(), request.page_token());
    if (from != order_.end()) {
      ++from;
    } else {
      from = std::find_if(order_.begin(), order_.end(), [&](const std::string& id) { return JobNumber(id) > last; });
    }
  }
  const std::string& array_id = request.array_id();
  if (!array_id.empty()) {
    const Job* first = Find(array_id);  // an array is named after its first job
    if (!first || first->info.spec().array_id() != array_id) {
      return Status::NotFound(fmt::format("no array '{}'", array_id));
    }
  }
  const int size = PageSize(request.page_size(), kJobsPage, kMaxJobsPage);
  ListJobsReply reply;
  size_t bytes = 0;
  for (auto it = from; it != order_.end(); ++it) {
    const JobInfo& info = jobs_.at(*it).info;
    if (!array_id.empty() && info.spec().array_id() != array_id) continue;
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
    *reply.add_jobs() = listed;
    bytes += more;
  }
  return reply;
}

Result<MetricsReply> JobManager::Metrics(const JobRequest& request) const {
  const Job* job = Find(request.job_id());
  if (!job) return Status::NotFound(fmt::format("no job '{}'", request.job_id()));
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

Result<LogsReply> JobManager::Logs(const LogsRequest& request) const {
  const Job* job = Find(request.job_id());
  if (!job) return Status::NotFound(fmt::format("no job '{}'", request.job_id()));
  LogsReply reply;
  reply.set_state(job->info.state());
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
