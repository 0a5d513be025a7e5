// The head's HTTP face on --dashboard-port (127.0.0.1 only, DESIGN rule 8):
//   GET /            a page that shows nodes and jobs (token in ?token=)
//   GET /api/status  ClusterStatus as JSON
//   GET /api/jobs    ListJobsReply as JSON
//   GET /metrics     Prometheus text
// Every call carries the cluster token (Authorization: Bearer, or ?token=);
// without it the answer is 401. Reads go through the head's event loop.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "common/status.h"
#include "daemon/event_loop.h"
#include "daemon/head/head_core.h"

namespace clusterd {

class Dashboard {
 public:
  // REQUIRES: loop and core outlive this object.
  Dashboard(EventLoop* loop, HeadCore* core, std::string token);
  ~Dashboard();

  Status Start(const std::string& ip, int port);
  void Stop();

  // One request's answer: status code, content type, body. Public for tests.
  struct Reply {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
  };
  Reply Answer(const std::string& target, const std::string& authorization);

 private:
  void Serve();

  EventLoop* loop_;
  HeadCore* core_;
  std::string token_;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace clusterd
