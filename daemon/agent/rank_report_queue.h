// What the rank runner tells the head, in order. A message that must reach
// the head (must_reach_head.h: exits, starts that tell a port, reports) is
// kept while the link refuses it (the head away, its queue full) and sent
// by Flush once it takes messages again; a rank's exit also waits while its
// log is not all shipped (a job's last exit ends it, and its logs must be
// whole by then). Reports are a rank's steps: never sent before the ones
// kept ahead of them, and past kMaxKeptReports kept the newest are refused.
// Not thread-safe: the node agent's loop owns it, with the runner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "agent.pb.h"
#include "common/status.h"

namespace clusterd {

class RankReportQueue {
 public:
  // Returns whether the link took the message.
  using SendFn = std::function<bool(const AgentMessage&)>;
  // Whether `message` is the exit of a rank whose log is not all shipped yet.
  using WaitsForLogFn = std::function<bool(const AgentMessage&)>;

  static constexpr size_t kMaxKeptReports = 4096;

  RankReportQueue(SendFn send, WaitsForLogFn waits_for_log)
      : send_(std::move(send)), waits_for_log_(std::move(waits_for_log)) {}

  // Sends now; what must reach the head is kept if the link refuses it.
  void Report(const AgentMessage& message);
  // As Report, but an exit whose log is not all shipped waits for Flush.
  void ReportKept(const AgentMessage& message);
  // Keeps `message` for Flush without trying the link first (an exit behind its log).
  void Keep(AgentMessage message) { kept_.push_back(std::move(message)); }
  // A rank's report, numbered from `*report_seq` (advanced when it is
  // taken): sent now when nothing is kept, else kept behind what is.
  Status ReportMetrics(AgentMessage message, int64_t* report_seq);
  // Sends what is kept, in order, until the link refuses; exits whose log
  // is still not shipped stay kept.
  void Flush();
  // Sends a message that is not kept if refused (a log chunk the runner tracks itself).
  bool SendUnkept(const AgentMessage& message) { return send_(message); }
  size_t kept() const { return kept_.size(); }

 private:
  SendFn send_;
  WaitsForLogFn waits_for_log_;
  std::vector<AgentMessage> kept_;  // must reach the head, refused while it was away
};

}  // namespace clusterd
