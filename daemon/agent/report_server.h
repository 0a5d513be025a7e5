// The Unix socket a training program's ctrain::report() talks to
// (DESIGN rule 9: train/ needs only libtorch). One request per connection:
//   4-byte big-endian length + the JSON form of MetricsReport
// answered the same way with {"ok":true} or {"ok":false,"error":"..."}.
//
// The socket is the agent's user's only (0600), and the handler learns who
// called (SO_PEERCRED): only this agent's ranks may report, as themselves.
// Each connection has its own thread and a deadline for its whole frame, so
// a client that stalls holds up nobody else. Connections are counted per
// rank, as soon as one is accepted (the caller is known from SO_PEERCRED
// before it sends a byte): a rank holds at most slots_per_rank at once, and
// its first one is never refused for want of room, so no rank can take
// another's. Processes that are no rank share a few slots of their own, in
// which they are told why they may not report. Each rank's reports pass
// a ReportRate (report_rate.h): over the rate, they are held back.
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "agent.pb.h"
#include "common/clock.h"
#include "common/status.h"
#include "daemon/agent/report_rate.h"

namespace clusterd {

// What a rank may report, checked before the handler sees it: metric names
// become DVCLive file names on the submitter's machine and columns on
// terminals, and every value stays in the head's memory and journal. A
// name is 1..kMaxMetricNameBytes bytes, no control characters, and, split
// at '/' (DVCLive's folders), no empty, "." or ".." part; at most
// kMaxMetricsPerReport values a report. A checkpoint path has no control
// characters and at most kMaxCheckpointPathBytes bytes (PATH_MAX).
inline constexpr size_t kMaxMetricNameBytes = 128;
inline constexpr int kMaxMetricsPerReport = 1000;
inline constexpr size_t kMaxCheckpointPathBytes = 4096;
Status CheckMetricsReport(const MetricsReport& report);

// How many connections and how many reports a second a rank gets (the
// config table's report_slots_per_rank, report_rate_per_s, report_burst).
struct ReportLimits {
  int slots_per_rank = 4;    // a rank's connections served at once
  int max_clients = 64;      // all ranks' connections at once, past each rank's first
  int stranger_slots = 4;    // connections of processes that are no rank, told why
  int rate_per_s = 0;        // a rank's reports a second (0: no limit)
  int burst = 1;             // reports a rank may make at once, after a pause
  Micros max_hold = 2'000'000;  // below the clients' 5 s timeout: a report held longer is refused
};

class ReportServer {
 public:
  // Returns an error to hand back to the caller, or OK. `peer` is the
  // connecting process (SO_PEERCRED).
  using Handler = std::function<Status(const MetricsReport& report, pid_t peer)>;
  // The rank process `peer` reports for, as a name that is that rank's
  // alone (its job, attempt and rank), or why it may not report. Null:
  // each process counts as a rank of its own.
  using Identify = std::function<Result<std::string>(pid_t peer)>;

  static constexpr int kMaxClients = 64;
  static constexpr int kFrameDeadlineMs = 5000;

  // `clock` (null: the system's) paces the rate limit.
  ReportServer(std::string path, Handler handler, Identify identify = nullptr, ReportLimits limits = {},
               const Clock* clock = nullptr);
  ~ReportServer();

  Status Start();
  // Stops accepting and waits for the connections being served.
  void Stop();
  const std::string& path() const { return path_; }

 private:
  void Serve();
  // Whether a connection of `rank` ("": a stranger) may be served now; if
  // so, it is counted. Otherwise the reason.
  Status Admit(const std::string& rank, int fd);
  void Release(const std::string& rank, int fd);
  void HandleConnection(int fd, pid_t pid, const std::string& rank, const Status& identified);
  // Waits `hold`, or less when Stop() comes; false when it did.
  bool HoldBack(Micros hold);

  std::string path_;
  Handler handler_;
  Identify identify_;
  ReportLimits limits_;
  SystemClock system_clock_;
  const Clock* clock_;  // the one given, else system_clock_
  ReportRate rate_;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable idle_;
  std::condition_variable stop_;  // wakes reports held back, at Stop
  int clients_ = 0;               // every connection served, strangers' included
  int strangers_ = 0;
  std::map<std::string, int> per_rank_;  // connections served, by rank
  std::set<int> client_fds_;  // shut down at Stop, so nobody waits out a deadline
};

// Framing, shared with tests: reads/writes one length-prefixed frame; the
// read gives up at `deadline_ms` after it started, whatever the client does.
Status ReadFrame(int fd, std::string* payload, uint32_t max_bytes, int deadline_ms = ReportServer::kFrameDeadlineMs);
Status WriteFrame(int fd, const std::string& payload);

}  // namespace clusterd
