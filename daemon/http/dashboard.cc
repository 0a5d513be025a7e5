#include "daemon/http/dashboard.h"

#include <fmt/format.h>

#include "common/auth.h"
#include "common/proto_json.h"
#include "daemon/http/dashboard_page.h"
#include "daemon/http/prometheus.h"

namespace clusterd {

namespace {

std::string Path(const std::string& target) { return target.substr(0, target.find('?')); }

// The path as it can stand in a JSON string: printable ASCII, no quote or backslash.
std::string Printable(const std::string& path) {
  std::string out;
  for (char c : path) out += c > 0x20 && c < 0x7f && c != '"' && c != '\\' ? c : '?';
  return out;
}

std::string QueryToken(const std::string& target) {
  auto query = target.find('?');
  if (query == std::string::npos) return "";
  for (size_t at = query + 1; at < target.size();) {
    size_t end = target.find('&', at);
    if (end == std::string::npos) end = target.size();
    if (target.compare(at, 6, "token=") == 0) return target.substr(at + 6, end - at - 6);
    at = end + 1;
  }
  return "";
}

}  // namespace

Dashboard::Dashboard(EventLoop* loop, HeadCore* core, std::string token, HttpServer::Limits limits)
    : loop_(loop),
      core_(core),
      token_(std::move(token)),
      server_([this](const HttpRequest& request, HttpServer::Respond respond) { Handle(request, std::move(respond)); },
              limits) {}

Dashboard::~Dashboard() { Stop(); }

Status Dashboard::Start(const std::string& ip, int port) { return server_.Start(ip, port); }

void Dashboard::Stop() { server_.Stop(); }

std::optional<HttpReply> Dashboard::AnswerAtOnce(const HttpRequest& request) const {
  if (request.method != "GET") return HttpReply{405, "application/json", R"({"error":"only GET"})"};
  std::string path = Path(request.target);
  if (path == "/" || path == "/index.html") return HttpReply{200, "text/html; charset=utf-8", kDashboardPage};
  const std::string& authorization = request.authorization;
  std::string given = authorization.rfind("Bearer ", 0) == 0 ? authorization.substr(7) : QueryToken(request.target);
  if (given.empty()) {
    return HttpReply{401, "application/json",
                     R"J({"error":"missing cluster token (Authorization: Bearer TOKEN or ?token=)"})J"};
  }
  if (!TokensEqual(given, token_)) return HttpReply{401, "application/json", R"({"error":"wrong cluster token"})"};
  if (path == "/api/status" || path == "/api/jobs" || path == "/metrics") return std::nullopt;
  return HttpReply{404, "application/json", fmt::format(R"({{"error":"no such page: {}"}})", Printable(path))};
}

HttpReply Dashboard::Read(const std::string& path) const {
  if (path == "/api/status") return {200, "application/json", ToJson(core_->GetStatus())};
  if (path == "/api/jobs") {
    ListJobsReply reply;
    for (auto& job : core_->jobs().List()) *reply.add_jobs() = std::move(job);
    return {200, "application/json", ToJson(reply)};
  }
  return {200, "text/plain; version=0.0.4",
          FormatPrometheus(core_->GetStatus(), core_->jobs().List(), core_->jobs().LatestMetrics())};
}

void Dashboard::Handle(const HttpRequest& request, HttpServer::Respond respond) {
  if (auto now = AnswerAtOnce(request)) return respond(std::move(*now));
  // The server's thread goes on serving others while the loop reads.
  loop_->Post([this, path = Path(request.target), respond = std::move(respond)] { respond(Read(path)); });
}

}  // namespace clusterd
