#include "daemon/ha/dashboard_redirect.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

namespace clusterd {

namespace {

constexpr size_t kMaxRequestHead = 8192;
constexpr int kReadTimeoutMs = 1000;

}  // namespace

std::string RequestTarget(const std::string& request_head) {
  const size_t first_space = request_head.find(' ');
  if (first_space == std::string::npos) return "/";
  const size_t second_space = request_head.find(' ', first_space + 1);
  const size_t line_end = request_head.find("\r\n");
  if (second_space == std::string::npos || (line_end != std::string::npos && second_space > line_end)) return "/";
  std::string target = request_head.substr(first_space + 1, second_space - first_space - 1);
  // Only a path: an absolute URL or anything else would send the browser elsewhere.
  if (target.empty() || target[0] != '/' || (target.size() > 1 && target[1] == '/')) return "/";
  for (char c : target) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) return "/";
  }
  return target;
}

Result<std::unique_ptr<DashboardRedirect>> DashboardRedirect::Start(const std::string& host, int port,
                                                                    int bind_wait_ms, LeaderDashboardFn leader) {
  std::unique_ptr<DashboardRedirect> redirect(new DashboardRedirect(std::move(leader)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    return Status::InvalidArgument(fmt::format("the dashboard's host {} is not an IPv4 address", host));
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(bind_wait_ms);
  while (true) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status::IOError(fmt::format("socket: {}", std::strerror(errno)));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 && listen(fd, 64) == 0) {
      redirect->listen_fd_ = fd;
      break;
    }
    const int error = errno;
    close(fd);
    if (std::chrono::steady_clock::now() >= give_up) {
      return Status::Unavailable(fmt::format("a standby head cannot redirect the dashboard from {}:{}: {}", host,
                                             port, std::strerror(error)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (pipe2(redirect->wake_fds_, O_CLOEXEC) != 0) return Status::IOError(fmt::format("pipe: {}", std::strerror(errno)));
  redirect->thread_ = std::thread([r = redirect.get()] { r->Run(); });
  return redirect;
}

DashboardRedirect::~DashboardRedirect() { Stop(); }

void DashboardRedirect::Stop() {
  if (thread_.joinable()) {
    char byte = 0;
    if (write(wake_fds_[1], &byte, 1) < 0) {
      // The thread still ends: it polls the pipe and the socket only.
    }
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &wake_fds_[0], &wake_fds_[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void DashboardRedirect::Run() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Answer(fd);
    close(fd);
  }
}

void DashboardRedirect::Answer(int fd) {
  std::string head;
  char buffer[1024];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kReadTimeoutMs);
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxRequestHead) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd in{fd, POLLIN, 0};
    if (poll(&in, 1, static_cast<int>(left.count())) <= 0) return;
    ssize_t got = read(fd, buffer, sizeof buffer);
    if (got <= 0) return;
    head.append(buffer, static_cast<size_t>(got));
  }
  const std::string leader = leader_();
  std::string reply;
  if (leader.empty()) {
    const std::string body = "This head stands by and knows of no leader yet; try again in a moment.\n";
    reply = fmt::format("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n"
                        "Retry-After: 1\r\nConnection: close\r\n\r\n{}",
                        body.size(), body);
  } else {
    const std::string location = leader + RequestTarget(head);
    const std::string body = "This head stands by; the leader's dashboard is at " + leader + "\n";
    reply = fmt::format("HTTP/1.1 307 Temporary Redirect\r\nLocation: {}\r\nContent-Type: text/plain\r\n"
                        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
                        location, body.size(), body);
  }
  size_t sent = 0;
  while (sent < reply.size()) {
    ssize_t n = send(fd, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace clusterd
