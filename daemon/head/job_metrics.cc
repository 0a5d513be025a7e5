#include "daemon/head/job_metrics.h"

#include <algorithm>
#include <set>

namespace clusterd {

void MetricTally::Build(const std::vector<MetricRecord>& records) {
  *this = MetricTally{};
  built = true;
  std::map<int, int64_t> attempt_last_index;
  for (const MetricRecord& record : records) {
    if (record.attempt() != attempt) {
      attempt = record.attempt();
      last_seq.clear();
    }
    last_seq[record.rank()] = record.report_seq();
    int64_t& last = attempt_last_index[record.attempt()];
    last = std::max(last, record.index() + 1);
    bytes += static_cast<int64_t>(record.ByteSizeLong());
  }
  attempt_reports = records.empty() ? 0 : attempt_last_index[attempt];
  for (const auto& [a, count] : attempt_last_index) taken += count;
  appended = static_cast<int64_t>(records.size());
}

void MetricTally::StartAttempt(int new_attempt) {
  if (new_attempt == attempt) return;
  attempt = new_attempt;
  attempt_reports = 0;
  last_seq.clear();
}

bool MetricTally::IsRepeated(int of_attempt, int rank, int64_t report_seq) const {
  if (report_seq <= 0 || of_attempt != attempt) return false;  // <= 0: an agent from before the numbers
  auto last = last_seq.find(rank);
  return last != last_seq.end() && last->second >= report_seq;
}

void MetricTally::Appended(const MetricRecord& record, int64_t record_bytes) {
  ++attempt_reports;
  last_seq[record.rank()] = record.report_seq();
  ++appended;
  ++taken;
  bytes += record_bytes;
}

namespace {

bool OverBounds(size_t records, int64_t bytes, int64_t max_records, int64_t max_bytes) {
  return (max_records > 0 && static_cast<int64_t>(records) > max_records) || (max_bytes > 0 && bytes > max_bytes);
}

}  // namespace

size_t ThinMetrics(std::vector<MetricRecord>* records, MetricTally* tally, int64_t incoming_bytes,
                   int64_t max_records, int64_t max_bytes) {
  size_t dropped = 0;
  while (!records->empty() && OverBounds(records->size() + 1, tally->bytes + incoming_bytes, max_records, max_bytes)) {
    const int newest = records->back().attempt();
    std::vector<bool> latest(records->size(), false);
    std::set<int> ranks;
    for (size_t i = records->size(); i-- > 0 && (*records)[i].attempt() == newest;) {
      latest[i] = ranks.insert((*records)[i].rank()).second;
    }
    size_t kept = 0;
    size_t others = 0;  // records not protected, counted from the oldest: every 2nd goes
    for (size_t i = 0; i < records->size(); ++i) {
      ++tally->visited;
      MetricRecord& record = (*records)[i];
      if (!latest[i] && others++ % 2 == 1) {
        tally->bytes -= static_cast<int64_t>(record.ByteSizeLong());
        continue;
      }
      if (kept != i) (*records)[kept] = std::move(record);
      ++kept;
    }
    const size_t pass = records->size() - kept;
    records->resize(kept);
    dropped += pass;
    if (pass == 0) break;  // only the latest ones left: they stay, over the bound
  }
  tally->dropped += static_cast<int64_t>(dropped);
  return dropped;
}

}  // namespace clusterd
