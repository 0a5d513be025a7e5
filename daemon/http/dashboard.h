// The head's HTTP face on --dashboard-port (127.0.0.1 only, DESIGN rule 8).
// Pages (one embedded document, dashboard_page.cc, drawing what it fetches):
//   GET /            the cluster: nodes by state, resources, use, heartbeats
//   GET /jobs        jobs, filtered by state
//   GET /job?id=J    one job: attempts, placement, failures, log tails, charts
//   GET /store       the head's blob store
// JSON, bounded by the job manager's pages:
//   GET /api/status               ClusterStatus
//   GET /api/jobs?state=&page_token=   a ListJobsReply of one state (or all)
//   GET /api/job?id=J             JobInfo
//   GET /api/logs?id=J&rank=R[&offset=N]  LogsReply of one rank; without an
//                                 offset, its last 16 KiB
//   GET /api/metrics?id=J[&page_token=T]  MetricsReply
//   GET /api/store                the store's usage
//   GET /metrics                  Prometheus text
// The token: API clients send Authorization: Bearer (or ?token=). A browser
// opens the URL clusterd printed (?token=); the token then moves into a
// cookie (HttpOnly, SameSite=Strict) and the page reloads without it, so it
// leaves the address bar and history. A page without a good token is a
// refusal with no data. Tokens are compared in constant time.
// Served by an HttpServer (many clients, deadlines, bounded); the head's
// state is read on its event loop, without blocking the server's thread.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "daemon/event_loop.h"
#include "daemon/head/head_core.h"
#include "common/log_store.h"
#include "daemon/http/http_server.h"
#include "daemon/store/blob_store.h"

namespace clusterd {

// What the dashboard reads besides the head's core; either may be null (a
// log request without an offset then starts at 0; /api/store says no store).
struct DashboardSources {
  const LogStore* logs = nullptr;
  const BlobStore* blobs = nullptr;
};

class Dashboard {
 public:
  using Sources = DashboardSources;

  // REQUIRES: loop, core and sources outlive this object, and the loop runs until Stop().
  Dashboard(EventLoop* loop, HeadCore* core, std::string token, Sources sources = {}, HttpServer::Limits limits = {});
  ~Dashboard();

  Status Start(const std::string& ip, int port);
  // Closes every connection and returns promptly.
  void Stop();

  // The answer that needs no head state (a page, a refusal, a redirect, a
  // 404), or nullopt for one that must be read on the loop (Read). Public
  // for tests.
  std::optional<HttpReply> AnswerAtOnce(const HttpRequest& request) const;
  // REQUIRES: on the loop; AnswerAtOnce gave nullopt for this target.
  HttpReply Read(const std::string& target) const;

 private:
  void Handle(const HttpRequest& request, HttpServer::Respond respond);
  HttpReply Page(const HttpRequest& request) const;

  EventLoop* loop_;
  HeadCore* core_;
  std::string token_;
  Sources sources_;
  HttpServer server_;
};

}  // namespace clusterd
