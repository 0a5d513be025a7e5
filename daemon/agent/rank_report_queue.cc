#include "daemon/agent/rank_report_queue.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "daemon/agent/must_reach_head.h"

namespace clusterd {

void RankReportQueue::Report(const AgentMessage& message) {
  if (!send_(message) && MustReachHead(message)) kept_.push_back(message);
}

void RankReportQueue::ReportKept(const AgentMessage& message) {
  if (waits_for_log_(message)) {
    kept_.push_back(message);  // Flush sends it once the log is shipped
    return;
  }
  Report(message);
}

Status RankReportQueue::ReportMetrics(AgentMessage message, int64_t* report_seq) {
  if (kept_.empty()) {
    message.mutable_metrics()->set_report_seq(++*report_seq);
    Report(message);
    return Status::Ok();
  }
  // Behind the reports already kept, never before them: a rank's reports
  // are its steps, in order.
  const size_t kept = std::count_if(kept_.begin(), kept_.end(), [](const AgentMessage& m) { return m.has_metrics(); });
  if (kept >= kMaxKeptReports) {
    return Status::Unavailable(fmt::format("the head has been away for {} reports; this one is not kept", kept));
  }
  message.mutable_metrics()->set_report_seq(++*report_seq);
  kept_.push_back(std::move(message));
  Flush();
  return Status::Ok();
}

void RankReportQueue::Flush() {
  std::vector<AgentMessage> pending;
  pending.swap(kept_);
  for (size_t i = 0; i < pending.size(); ++i) {
    if (waits_for_log_(pending[i])) {
      kept_.push_back(std::move(pending[i]));
    } else if (!send_(pending[i])) {
      // The head is away (or its queue full): the rest waits, unsent.
      kept_.insert(kept_.end(), std::make_move_iterator(pending.begin() + static_cast<ptrdiff_t>(i)),
                   std::make_move_iterator(pending.end()));
      return;
    }
  }
}

}  // namespace clusterd
