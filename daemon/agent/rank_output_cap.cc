#include "daemon/agent/rank_output_cap.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/text.h"

namespace clusterd {

RankOutputCap::RankOutputCap(int64_t limit_bytes, int64_t tail_bytes)
    : limit_(std::max<int64_t>(limit_bytes, 0)),
      head_bytes_(limit_ - std::clamp<int64_t>(tail_bytes, 0, limit_ / 2)),
      tail_bytes_(limit_ - head_bytes_) {}

std::string RankOutputCap::Take(std::string_view data) {
  if (limit_ == 0) return std::string(data);
  std::string kept;
  if (seen_ < head_bytes_) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(head_bytes_ - seen_, static_cast<int64_t>(data.size())));
    kept.assign(data.substr(0, n));
    data.remove_prefix(n);
    seen_ += static_cast<int64_t>(n);
  }
  if (!data.empty()) {
    seen_ += static_cast<int64_t>(data.size());
    Hold(data);
    if (!told_ && dropped() > 0) {
      told_ = true;
      if ((kept.empty() ? last_kept_ : kept.back()) != '\n') kept += '\n';
      kept += fmt::format("[clusterd: this rank's output passed its log limit ({}); what follows is dropped but "
                          "for the last {}, kept when the rank ends]\n",
                          HumanBytes(static_cast<uint64_t>(limit_)), HumanBytes(static_cast<uint64_t>(tail_bytes_)));
    }
  }
  if (!kept.empty()) last_kept_ = kept.back();
  return kept;
}

void RankOutputCap::Hold(std::string_view data) {
  const size_t capacity = static_cast<size_t>(tail_bytes_);
  if (capacity == 0) return;
  if (data.size() >= capacity) {  // the window is the end of data alone
    window_.assign(data.substr(data.size() - capacity));
    oldest_ = 0;
    held_ = capacity;
    return;
  }
  if (window_.size() < capacity) {  // still filling up: appended in order
    const size_t room = capacity - window_.size();
    const size_t n = std::min(room, data.size());
    window_.append(data.substr(0, n));
    held_ = window_.size();
    data.remove_prefix(n);
    if (data.empty()) return;
  }
  // Full: the newest bytes overwrite the oldest, from oldest_ on, wrapping.
  while (!data.empty()) {
    const size_t n = std::min(capacity - oldest_, data.size());
    window_.replace(oldest_, n, data.substr(0, n));
    oldest_ = (oldest_ + n) % capacity;
    data.remove_prefix(n);
  }
}

std::string RankOutputCap::Held() const { return window_.substr(oldest_) + window_.substr(0, oldest_); }

std::string RankOutputCap::Finish() {
  if (finished_ || limit_ == 0) return "";
  finished_ = true;
  std::string out;
  if (dropped() > 0) {
    if (last_kept_ != '\n') out += '\n';
    out += fmt::format("[clusterd: {} of this rank's output dropped here (its log limit is {}); the last {} follow]\n",
                       HumanBytes(static_cast<uint64_t>(dropped())), HumanBytes(static_cast<uint64_t>(limit_)),
                       HumanBytes(held_));
  }
  out += Held();
  // Said again at the very end, where a reader of the log's last lines
  // (the dashboard, a failed job's reason, `tail`) looks.
  if (dropped() > 0) {
    if (out.back() != '\n') out += '\n';
    out += fmt::format("[clusterd: this rank's log is cut: {} of its output were dropped before the last {} above "
                       "(its log limit is {})]\n",
                       HumanBytes(static_cast<uint64_t>(dropped())), HumanBytes(held_),
                       HumanBytes(static_cast<uint64_t>(limit_)));
  }
  window_.clear();
  window_.shrink_to_fit();
  held_ = 0;
  oldest_ = 0;
  return out;
}

}  // namespace clusterd
