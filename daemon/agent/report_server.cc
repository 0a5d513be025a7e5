#include "daemon/agent/report_server.h"

#include <google/protobuf/util/json_util.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/logs/log_limiter.h"
#include "common/logging.h"
#include "common/text.h"
#include "common/threads.h"

namespace clusterd {

namespace {

constexpr uint32_t kMaxFrame = 1 << 20;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Reads exactly `size` bytes before `deadline` (steady ms): a client that
// trickles a byte a second cannot stretch it.
Status ReadExactly(int fd, char* data, size_t size, int64_t deadline) {
  while (size > 0) {
    int64_t left = deadline - NowMs();
    if (left <= 0) return Status::Unavailable("the frame did not arrive in time");
    pollfd pfd{fd, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return Status::Unavailable("the frame did not arrive in time");
    ssize_t n = read(fd, data, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Status::IOError(n == 0 ? "connection closed mid-frame" : strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Status ReadFrame(int fd, std::string* payload, uint32_t max_bytes, int deadline_ms) {
  int64_t deadline = NowMs() + deadline_ms;
  unsigned char header[4];
  RETURN_IF_ERROR(ReadExactly(fd, reinterpret_cast<char*>(header), 4, deadline));
  uint32_t size = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) | (uint32_t{header[2]} << 8) | header[3];
  if (size > max_bytes) return Status::InvalidArgument(fmt::format("frame of {} bytes exceeds {}", size, max_bytes));
  payload->assign(size, '\0');
  return ReadExactly(fd, payload->data(), size, deadline);
}

// What a rank reads back: {"ok":true} or {"ok":false,"error":"..."}.
std::string ReplyJson(const Status& status) {
  nlohmann::ordered_json reply = {{"ok", status.ok()}};
  if (!status.ok()) reply["error"] = status.message();
  return reply.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Status WriteFrame(int fd, const std::string& payload) {
  uint32_t size = static_cast<uint32_t>(payload.size());
  std::string frame = {static_cast<char>(size >> 24), static_cast<char>(size >> 16), static_cast<char>(size >> 8),
                       static_cast<char>(size)};
  frame += payload;
  size_t done = 0;
  while (done < frame.size()) {
    // MSG_NOSIGNAL: a client that hung up costs this write an EPIPE, no more.
    ssize_t n = send(fd, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IOError(strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

ReportServer::ReportServer(std::string path, Handler handler, Identify identify, ReportLimits limits, const Clock* clock)
    : path_(std::move(path)),
      handler_(std::move(handler)),
      identify_(std::move(identify)),
      limits_(limits),
      clock_(clock ? clock : &system_clock_),
      rate_(clock_, limits.rate_per_s, limits.burst, limits.max_hold) {
  limits_.slots_per_rank = std::max(limits_.slots_per_rank, 1);
}

ReportServer::~ReportServer() { Stop(); }

Status ReportServer::Start() {
  sockaddr_un addr{};
  if (path_.size() >= sizeof addr.sun_path) {
    return Status::InvalidArgument(fmt::format("socket path {} is longer than {} bytes", path_, sizeof addr.sun_path - 1));
  }
  unlink(path_.c_str());
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
  // Made 0600 from the start (the umask decides between bind and a chmod).
  mode_t old_mask = umask(0177);
  int bound = listen_fd_ < 0 ? -1 : bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  umask(old_mask);
  if (bound != 0 || listen(listen_fd_, 64) != 0) {
    return Status::IOError(fmt::format("cannot listen on {}: {}", path_, strerror(errno)));
  }
  thread_ = StartNamedThread("report-server", [this] { Serve(); });
  return Status::Ok();
}

void ReportServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  std::unique_lock<std::mutex> lock(mutex_);
  for (int fd : client_fds_) shutdown(fd, SHUT_RDWR);
  stop_.notify_all();
  idle_.wait(lock, [this] { return clients_ == 0; });
  lock.unlock();
  if (listen_fd_ >= 0) close(listen_fd_);
  unlink(path_.c_str());
}

void ReportServer::Serve() {
  while (!stopping_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;  // wakes up to notice Stop()
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ucred peer{};
    socklen_t length = sizeof peer;
    const pid_t pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0 ? peer.pid : 0;
    Result<std::string> rank = identify_ ? identify_(pid) : Result<std::string>(std::to_string(pid));
    const std::string key = rank.ok() ? *rank : "";
    Status admitted = Admit(key, fd);
    if (!admitted.ok()) {
      // Said at once, without reading the request: the answer is a few
      // bytes, which the socket's buffer takes without waiting.
      if (!key.empty()) WriteFrame(fd, ReplyJson(admitted));
      close(fd);
      continue;
    }
    StartNamedThread("report-conn", [this, fd, pid, key, identified = rank.status()] {
      HandleConnection(fd, pid, key, identified);
      Release(key, fd);
    }).detach();
  }
}

Status ReportServer::Admit(const std::string& rank, int fd) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (rank.empty()) {
    // A flood of connections from strangers is refused, not queued.
    if (strangers_ >= limits_.stranger_slots) return Status::ResourceExhausted("too many connections");
    ++strangers_;
  } else {
    int& mine = per_rank_[rank];
    if (mine >= limits_.slots_per_rank) {
      if (mine == 0) per_rank_.erase(rank);
      return Status::ResourceExhausted(
          fmt::format("this rank has {} reports under way already, the most report_slots_per_rank allows: "
                      "report one at a time",
                      mine));
    }
    // A rank's first connection is served whatever the others hold.
    if (mine > 0 && clients_ >= limits_.max_clients) {
      return Status::ResourceExhausted(
          fmt::format("the node's agent serves {} reports at once already; this rank has {} under way", clients_,
                      mine));
    }
    ++mine;
  }
  ++clients_;
  client_fds_.insert(fd);
  return Status::Ok();
}

void ReportServer::Release(const std::string& rank, int fd) {
  std::lock_guard<std::mutex> lock(mutex_);
  client_fds_.erase(fd);
  close(fd);
  if (rank.empty()) {
    --strangers_;
  } else if (--per_rank_[rank] <= 0) {
    per_rank_.erase(rank);
  }
  if (--clients_ == 0) idle_.notify_all();
}

bool ReportServer::HoldBack(Micros hold) {
  if (hold <= 0) return !stopping_;
  std::unique_lock<std::mutex> lock(mutex_);
  return !stop_.wait_for(lock, std::chrono::microseconds(hold), [this] { return stopping_.load(); });
}

// Bounds on what a report holds: a 300-byte metric name would fail every
// fetch of the job's outputs (DVCLive's file name too long), and reports of
// 24,000 metrics each would grow the head by a gigabyte.
Status CheckMetricsReport(const MetricsReport& report) {
  if (report.values_size() > kMaxMetricsPerReport) {
    return Status::InvalidArgument(fmt::format("a report of {} metrics is more than the {} one report may hold",
                                               report.values_size(), kMaxMetricsPerReport));
  }
  // A checkpoint folder named with a newline or escape codes would forge
  // lines of `clusterctl job` and colour the terminal (its name is shown
  // when it cannot be stored).
  const std::string& checkpoint = report.checkpoint();
  if (checkpoint.size() > kMaxCheckpointPathBytes) {
    return Status::InvalidArgument(fmt::format("checkpoint path {}... is {} bytes, more than the {} a path may be",
                                               JsonQuote(checkpoint.substr(0, 64)), checkpoint.size(),
                                               kMaxCheckpointPathBytes));
  }
  if (HasTerminalControls(checkpoint)) {
    return Status::InvalidArgument(
        fmt::format("checkpoint path {} holds a control character", JsonQuote(checkpoint.substr(0, 256))));
  }
  for (const auto& [name, value] : report.values()) {
    const std::string shown = JsonQuote(name.substr(0, 64)) + (name.size() > 64 ? "..." : "");
    if (name.size() > kMaxMetricNameBytes) {
      return Status::InvalidArgument(fmt::format("metric name {} is {} bytes, more than the {} a metric name may be",
                                                 shown, name.size(), kMaxMetricNameBytes));
    }
    if (HasTerminalControls(name)) {
      return Status::InvalidArgument(fmt::format("metric name {} holds a control character", shown));
    }
    for (size_t from = 0;;) {
      const size_t slash = std::min(name.find('/', from), name.size());
      const std::string part = name.substr(from, slash - from);
      if (part.empty() || part == "." || part == "..") {
        return Status::InvalidArgument(fmt::format(
            "metric name {} has an empty, '.' or '..' part (it names a DVCLive file; '/' makes folders)", shown));
      }
      if (slash == name.size()) break;
      from = slash + 1;
    }
  }
  return Status::Ok();
}

void ReportServer::HandleConnection(int fd, pid_t pid, const std::string& rank, const Status& identified) {
  std::string payload;
  Status st = ReadFrame(fd, &payload, kMaxFrame);
  if (st.ok()) {
    MetricsReport report;
    auto parsed = google::protobuf::util::JsonStringToMessage(payload, &report);
    // The parser quotes what it could not take: shown, never obeyed (a
    // newline in a field name would forge a log line).
    st = parsed.ok() ? CheckMetricsReport(report)
                     : Status::InvalidArgument(
                           fmt::format("not a MetricsReport: {}", JsonQuote(parsed.message().as_string())));
    if (st.ok() && rank.empty()) st = identified;
    if (st.ok()) {
      Result<Micros> hold = rate_.Take(rank);
      st = hold.status();
      if (st.ok() && !HoldBack(*hold)) st = Status::Unavailable("the node's agent is stopping");
    }
    if (st.ok()) st = handler_(report, pid);
  }
  if (!st.ok()) {
    // A rank in a tight loop is refused as fast as it reports: a line each
    // would fill the node's log.
    static LogLimiter limiter(20, 10'000'000);
    int64_t held_back = 0;
    if (limiter.Allow(clock_->NowMicros(), &held_back)) {
      LOG_WARN("report from pid {} refused: {}{}", pid, st.message(),
               held_back > 0 ? fmt::format(" ({} more refused since the last such line, not logged)", held_back) : "");
    }
  }
  WriteFrame(fd, ReplyJson(st));
}

}  // namespace clusterd
