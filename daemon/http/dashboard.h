// The head's HTTP face on --dashboard-port (127.0.0.1 only, DESIGN rule 8):
//   GET /            a page that shows nodes and jobs (token in ?token=)
//   GET /api/status  ClusterStatus as JSON
//   GET /api/jobs    ListJobsReply as JSON
//   GET /metrics     Prometheus text
// Every call but the page carries the cluster token (Authorization: Bearer,
// or ?token=), compared in constant time; without it the answer is 401.
// Served by an HttpServer (many clients, deadlines, bounded); the head's
// state is read on its event loop, without blocking the server's thread.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "daemon/event_loop.h"
#include "daemon/head/head_core.h"
#include "daemon/http/http_server.h"

namespace clusterd {

class Dashboard {
 public:
  // REQUIRES: loop and core outlive this object, and the loop runs until Stop().
  Dashboard(EventLoop* loop, HeadCore* core, std::string token, HttpServer::Limits limits = {});
  ~Dashboard();

  Status Start(const std::string& ip, int port);
  // Closes every connection and returns promptly.
  void Stop();

  // The answer that needs no head state (the page, a refusal, a 404), or
  // nullopt for one that must be read on the loop (Read). Public for tests.
  std::optional<HttpReply> AnswerAtOnce(const HttpRequest& request) const;
  // REQUIRES: on the loop; AnswerAtOnce gave nullopt.
  HttpReply Read(const std::string& path) const;

 private:
  void Handle(const HttpRequest& request, HttpServer::Respond respond);

  EventLoop* loop_;
  HeadCore* core_;
  std::string token_;
  HttpServer server_;
};

}  // namespace clusterd
