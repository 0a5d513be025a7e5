// The head's HTTP face on --dashboard-port (127.0.0.1 only, DESIGN rule 8).
// Pages (one document drawing what it fetches; its files: dashboard_page.h):
//   GET /            the cluster: nodes by state, resources, use, heartbeats,
//                    totals over time
//   GET /node?id=N   one node (id or name): its use over time
//   GET /jobs        jobs, filtered by state
//   GET /job?id=J    one job: attempts, placement, failures, log tails, metric
//                    charts, its nodes' use
//   GET /sweeps      the newest sweeps
//   GET /sweep?id=S  one sweep: its trials overlaid on a chart, the best marked
//   GET /store       the head's blob store
//   GET /assets/...  the pages' style and scripts (dashboard_page.h), the
//                    same for everyone: no token needed
// JSON, bounded by the job manager's pages:
//   GET /api/status               ClusterStatus
//   GET /api/jobs?state=&page_token=   a ListJobsReply of one state (or all)
//   GET /api/job?id=J             JobInfo
//   GET /api/logs?id=J&rank=R[&offset=N]  LogsReply of one rank; without an
//                                 offset, its last 16 KiB
//   GET /api/metrics?id=J[&page_token=T]  MetricsReply
//   GET /api/sweeps               ListSweepsReply, the newest first
//   GET /api/sweep?id=S           SweepInfo
//   GET /api/store                the store's usage
//   GET /api/usage/nodes/NODE, /api/usage/cluster   the usage history (usage_api.h)
//   GET /metrics                  Prometheus text
// Jobs and their code packages, for clusterd.job_submission (Ray's
// JobSubmissionClient): job_api.h (POST /api/jobs, POST /api/job/stop,
// DELETE /api/job) and package_upload.h (GET|PUT /api/packages/ID).
// Wherever ?id= names a job, a submission_id does too. Any other method
// gets 405 naming what the path allows.
// The token: API clients send Authorization: Bearer (or ?token=). A browser
// opens the URL clusterd printed (?token=); the token then moves into a
// cookie (HttpOnly, SameSite=Strict) and the page reloads without it, so it
// leaves the address bar and history. A page without a good token is a
// refusal with no data. Tokens are compared in constant time. A write
// (POST, PUT, DELETE) takes the token from the Authorization header only:
// a browser attaches the cookie to whatever request a page makes of this
// origin, and an address with ?token= lands in logs and histories.
// Cross-origin scripts cannot set that header without a CORS preflight
// (OPTIONS), which gets a 405.
// Served by an HttpServer (many clients, deadlines, bounded); the head's
// state is read on its event loop, without blocking the server's thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "daemon/event_loop.h"
#include "daemon/head/head_core.h"
#include "daemon/head/identity/principal.h"
#include "daemon/head/identity/user_registry.h"
#include "common/logs/log_store.h"
#include "daemon/http/http_server.h"
#include "daemon/http/job_api.h"
#include "daemon/http/package_upload.h"
#include "daemon/http/usage_api.h"
#include "daemon/store/blob_store.h"

namespace clusterd {

// What the dashboard reads besides the head's core; either may be null (a
// log request without an offset then starts at 0; /api/store says no store).
struct DashboardSources {
  const LogStore* logs = nullptr;
  BlobStore* blobs = nullptr;  // also takes packages (PUT /api/packages/ID)
  // Says at once, off the loop, whether a job's logs are in `logs` (a new
  // leader in HA reads final jobs' logs back from S3 after it serves:
  // daemon/ha/log_mirror.h); an error answers the log request. Null: they are.
  std::function<Status(const std::string& job_id)> logs_ready;
};

class Dashboard {
 public:
  using Sources = DashboardSources;

  // Tokens are resolved by `users`: every read and write obeys the access
  // rules for the caller (identity/access_rules.h).
  // REQUIRES: loop, core, users and sources outlive this object, and the
  // loop runs until Stop().
  Dashboard(EventLoop* loop, HeadCore* core, const UserRegistry* users, Sources sources = {},
            HttpServer::Limits limits = {});
  // Only the admin's `token` (tests).
  Dashboard(EventLoop* loop, HeadCore* core, const std::string& token, Sources sources = {},
            HttpServer::Limits limits = {});
  ~Dashboard();

  Status Start(const std::string& ip, int port);
  // Closes every connection and returns promptly.
  void Stop();

  // The answer that needs no head state (a page, a refusal, a redirect, a
  // 404), or nullopt for one that must be read on the loop (Read). Public
  // for tests.
  std::optional<HttpReply> AnswerAtOnce(const HttpRequest& request) const;
  // The same, telling who asked when it gives nullopt.
  std::optional<HttpReply> AnswerAtOnce(const HttpRequest& request, Principal* caller) const;
  // REQUIRES: on the loop; AnswerAtOnce gave nullopt for this target.
  HttpReply Read(const std::string& target, const Principal& caller) const;

 private:
  void Handle(const HttpRequest& request, HttpServer::Respond respond);
  // A request with a body, its headers read: refused at once, or streamed
  // (a package's upload), or neither (the body is read, then Handle).
  HttpStream Stream(const HttpRequest& request);
  // A 405, 401 or 403 for this request, nullopt when it may go on (with
  // *caller set, for a request that needs a token).
  std::optional<HttpReply> Refused(const HttpRequest& request, Principal* caller) const;
  HttpReply Page(const HttpRequest& request) const;

  EventLoop* loop_;
  HeadCore* core_;
  std::unique_ptr<UserRegistry> own_users_;  // the token constructor's
  const UserRegistry* users_;
  Sources sources_;
  JobApi job_api_;
  UsageApi usage_api_;
  PackageUploads packages_;
  HttpServer server_;  // last: stopped and gone before what it calls
};

}  // namespace clusterd
