// What a standby head serves on the dashboard's port: every request gets
// 307 Temporary Redirect to the same path and query on the leader's
// dashboard, so that a bookmark of any head's dashboard reaches the
// leader's; 503 while no leader's dashboard is known. One thread answers
// one connection at a time, each read bounded by a short timeout: it
// serves redirects only, never state.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace clusterd {

class DashboardRedirect {
 public:
  // The leader's dashboard as "http://HOST:PORT", "" when none is known.
  using LeaderDashboardFn = std::function<std::string()>;

  // Binds host:port, waiting up to bind_wait_ms for a dashboard that is
  // still closing to free it.
  static Result<std::unique_ptr<DashboardRedirect>> Start(const std::string& host, int port, int bind_wait_ms,
                                                          LeaderDashboardFn leader);
  ~DashboardRedirect();  // Stop()
  DashboardRedirect(const DashboardRedirect&) = delete;
  DashboardRedirect& operator=(const DashboardRedirect&) = delete;

  void Stop();

 private:
  explicit DashboardRedirect(LeaderDashboardFn leader) : leader_(std::move(leader)) {}
  void Run();
  void Answer(int fd);

  LeaderDashboardFn leader_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};
  std::thread thread_;
};

// The request target of an HTTP request's first line ("GET /job?id=1
// HTTP/1.1" -> "/job?id=1"); "/" when the line is not such a request.
std::string RequestTarget(const std::string& request_head);

}  // namespace clusterd
