#include "daemon/http/dashboard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/proto_json.h"
#include "common/logging.h"
#include "daemon/http/prometheus.h"

namespace clusterd {

namespace {

namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

const char* kPage = R"HTML(<!doctype html>
<html><head><meta charset="utf-8"><title>clusterd</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
.ALIVE,.SUCCEEDED{color:#080}.DEAD,.FAILED{color:#b00}.DRAINING,.PENDING,.RESTARTING,.INFEASIBLE{color:#a60}</style></head>
<body><h1>clusterd</h1><p id="err"></p><h2>Nodes</h2><table id="nodes"></table><h2>Jobs</h2><table id="jobs"></table>
<script>
const token = new URLSearchParams(location.search).get('token') || '';
const get = p => fetch(p, {headers: {Authorization: 'Bearer ' + token}}).then(r => r.ok ? r.json() : r.json().then(e => Promise.reject(e.error)));
const esc = s => String(s ?? '').replace(/[&<>]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;'}[c]));
const res = r => Object.entries((r && r.amounts) || {}).map(([k, v]) => v + ' ' + k).join(', ');
function row(cells, th) { return '<tr>' + cells.map(c => th ? '<th>' + c + '</th>' : '<td>' + c + '</td>').join('') + '</tr>'; }
async function refresh() {
  try {
    const s = await get('/api/status'), j = await get('/api/jobs');
    document.getElementById('nodes').innerHTML = row(['name', 'state', 'address', 'available', 'total', 'reason'], true) +
      (s.nodes || []).map(n => row([esc(n.name), '<span class="' + n.state + '">' + n.state + '</span>', esc(n.address), res(n.available), res(n.total), esc(n.state_reason)])).join('');
    document.getElementById('jobs').innerHTML = row(['id', 'name', 'state', 'attempts', 'reason'], true) +
      (j.jobs || []).map(x => row([esc(x.job_id), esc(x.spec.name), '<span class="' + x.state + '">' + x.state + '</span>', (x.attempts || []).length, esc(x.reason)])).join('');
    document.getElementById('err').textContent = '';
  } catch (e) { document.getElementById('err').textContent = 'error: ' + e; }
}
refresh(); setInterval(refresh, 2000);
</script></body></html>
)HTML";

std::string QueryToken(const std::string& target) {
  auto at = target.find("token=");
  if (at == std::string::npos) return "";
  auto end = target.find('&', at);
  return target.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
}

}  // namespace

Dashboard::Dashboard(EventLoop* loop, HeadCore* core, std::string token)
    : loop_(loop), core_(core), token_(std::move(token)) {}

Dashboard::~Dashboard() { Stop(); }

Dashboard::Reply Dashboard::Answer(const std::string& target, const std::string& authorization) {
  std::string path = target.substr(0, target.find('?'));
  if (path == "/" || path == "/index.html") return {200, "text/html; charset=utf-8", kPage};
  std::string given = authorization.rfind("Bearer ", 0) == 0 ? authorization.substr(7) : QueryToken(target);
  if (given != token_) {
    return {401, "application/json",
            given.empty() ? R"J({"error":"missing cluster token (Authorization: Bearer TOKEN or ?token=)"})J"
                          : R"({"error":"wrong cluster token"})"};
  }
  if (path == "/api/status") {
    return {200, "application/json", loop_->Call<std::string>([this] { return ToJson(core_->GetStatus()); })};
  }
  if (path == "/api/jobs") {
    return {200, "application/json", loop_->Call<std::string>([this] {
              ListJobsReply reply;
              for (auto& job : core_->jobs().List()) *reply.add_jobs() = std::move(job);
              return ToJson(reply);
            })};
  }
  if (path == "/metrics") {
    return {200, "text/plain; version=0.0.4", loop_->Call<std::string>([this] {
              return FormatPrometheus(core_->GetStatus(), core_->jobs().List(), core_->jobs().LatestMetrics());
            })};
  }
  return {404, "application/json", fmt::format(R"({{"error":"no such page: {}"}})", path)};
}

Status Dashboard::Start(const std::string& ip, int port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 64) != 0) {
    Status failed = Status::Unavailable(fmt::format("cannot listen on {}:{}: {}", ip, port, strerror(errno)));
    if (listen_fd_ >= 0) close(listen_fd_);
    listen_fd_ = -1;
    return failed;
  }
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void Dashboard::Stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

void Dashboard::Serve() {
  boost::asio::io_context io;
  while (!stopping_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;  // wakes up to notice Stop()
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    timeval timeout{5, 0};  // a stuck client must not hold the dashboard
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    tcp::socket socket(io, tcp::v4(), fd);
    boost::beast::error_code ec;
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::read(socket, buffer, request, ec);
    if (ec) continue;
    Reply reply = request.method() == http::verb::get
                      ? Answer(std::string(request.target()), std::string(request[http::field::authorization]))
                      : Reply{405, "application/json", R"({"error":"only GET"})"};
    http::response<http::string_body> response{static_cast<http::status>(reply.status), request.version()};
    response.set(http::field::content_type, reply.content_type);
    response.body() = std::move(reply.body);
    response.prepare_payload();
    http::write(socket, response, ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }
}

}  // namespace clusterd
