// The Unix socket a training program's ctrain::report() talks to
// (DESIGN rule 9: train/ needs only libtorch). One request per connection:
//   4-byte big-endian length + the JSON form of MetricsReport
// answered the same way with {"ok":true} or {"ok":false,"error":"..."}.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "agent.pb.h"
#include "common/status.h"

namespace clusterd {

class ReportServer {
 public:
  // Returns an error to hand back to the caller, or OK.
  using Handler = std::function<Status(const MetricsReport&)>;

  ReportServer(std::string path, Handler handler);
  ~ReportServer();

  Status Start();
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
};

// Framing, shared with tests: reads/writes one length-prefixed frame.
Status ReadFrame(int fd, std::string* payload, uint32_t max_bytes);
Status WriteFrame(int fd, const std::string& payload);

}  // namespace clusterd
