// The Unix socket a training program's ctrain::report() talks to
// (DESIGN rule 9: train/ needs only libtorch). One request per connection:
//   4-byte big-endian length + the JSON form of MetricsReport
// answered the same way with {"ok":true} or {"ok":false,"error":"..."}.
//
// The socket is the agent's user's only (0600), and the handler learns who
// called (SO_PEERCRED): only this agent's ranks may report, as themselves.
// Each connection has its own thread and a deadline for its whole frame, so
// a client that stalls holds up nobody else; at most kMaxClients at once.
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "agent.pb.h"
#include "common/status.h"

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

class ReportServer {
 public:
  // Returns an error to hand back to the caller, or OK. `peer` is the
  // connecting process (SO_PEERCRED).
  using Handler = std::function<Status(const MetricsReport& report, pid_t peer)>;

  static constexpr int kMaxClients = 64;
  static constexpr int kFrameDeadlineMs = 5000;

  ReportServer(std::string path, Handler handler);
  ~ReportServer();

  Status Start();
  // Stops accepting and waits for the connections being served.
  void Stop();
  const std::string& path() const { return path_; }

 private:
  void Serve();
  void HandleConnection(int fd);

  std::string path_;
  Handler handler_;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable idle_;
  int clients_ = 0;
  std::set<int> client_fds_;  // shut down at Stop, so nobody waits out a deadline
};

// Framing, shared with tests: reads/writes one length-prefixed frame; the
// read gives up at `deadline_ms` after it started, whatever the client does.
Status ReadFrame(int fd, std::string* payload, uint32_t max_bytes, int deadline_ms = ReportServer::kFrameDeadlineMs);
Status WriteFrame(int fd, const std::string& payload);

}  // namespace clusterd
