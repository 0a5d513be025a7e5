#include "ctrain/agent_wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

namespace ctrain {

namespace {

using Json = nlohmann::ordered_json;  // members in the order written

// A double as protobuf JSON reads it: NaN and the infinities as its
// strings; a whole number (an epoch, a step) without a fraction, as it was
// meant; any other the shortest decimal that reads back to the same bits.
Json number_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53: every whole double below is an int64
  if (v == std::trunc(v) && std::fabs(v) < kExactIntegers) return static_cast<int64_t>(v);
  return v;
}

// Bytes that are not UTF-8 become U+FFFD: the agent takes UTF-8 only.
std::string dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

std::string json_number(double v) { return dump(number_json(v)); }

std::string json_string(const std::string& s) { return dump(Json(s)); }

std::string encode_report_json(const ReportMessage& m) {
  Json values = Json::object();
  for (const auto& [name, value] : m.values) values[name] = number_json(value);
  const Json report = {{"job_id", m.job_id},
                       {"attempt", m.attempt},
                       {"rank", m.rank},
                       {"values", std::move(values)},
                       {"checkpoint", m.checkpoint},
                       {"unix_ms", std::to_string(m.unix_ms)}};
  return dump(report);
}

std::string encode_frame(const std::string& payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  std::string f;
  f.reserve(4 + payload.size());
  f += static_cast<char>((n >> 24) & 0xff);
  f += static_cast<char>((n >> 16) & 0xff);
  f += static_cast<char>((n >> 8) & 0xff);
  f += static_cast<char>(n & 0xff);
  f += payload;
  return f;
}

AgentReply parse_reply(const std::string& json) {
  AgentReply bad;
  bad.error = "malformed agent reply: " + json.substr(0, 200);
  const nlohmann::json reply = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object()) return bad;
  const auto ok = reply.find("ok");
  if (ok == reply.end() || !ok->is_boolean()) return bad;
  AgentReply r;
  r.ok = ok->get<bool>();
  if (r.ok) return r;
  const auto error = reply.find("error");
  if (error != reply.end() && error->is_string()) r.error = error->get<std::string>();
  if (r.error.empty()) r.error = "agent refused the report without a reason";
  return r;
}

namespace {

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);  // no SIGPIPE if the agent went away
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

bool write_frame(int fd, const std::string& payload) {
  std::string f = encode_frame(payload);
  return write_all(fd, f.data(), f.size());
}

bool read_frame(int fd, std::string* payload) {
  unsigned char hdr[4];
  if (!read_all(fd, reinterpret_cast<char*>(hdr), 4)) return false;
  uint32_t n = (uint32_t(hdr[0]) << 24) | (uint32_t(hdr[1]) << 16) | (uint32_t(hdr[2]) << 8) | hdr[3];
  if (n > kMaxFrameBytes) return false;
  payload->assign(n, '\0');
  return n == 0 || read_all(fd, &(*payload)[0], n);
}

AgentReply send_report(const std::string& socket_path, const ReportMessage& msg, int timeout_ms) {
  AgentReply r;
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    r.error = "agent socket path too long: " + socket_path;
    return r;
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    r.error = std::string("socket(): ") + std::strerror(errno);
    return r;
  }
  // Timeouts on both directions: a stuck agent must not stall training.
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    r.error = "cannot connect to agent socket " + socket_path + ": " + std::strerror(errno);
  } else if (!write_frame(fd, encode_report_json(msg))) {
    r.error = "cannot send report to " + socket_path + ": " + std::strerror(errno);
    // The agent may have refused it before it was sent (this rank has too
    // many reports under way) and closed: its answer says why.
    std::string reply;
    if (read_frame(fd, &reply)) r = parse_reply(reply);
  } else {
    std::string reply;
    if (!read_frame(fd, &reply)) {
      r.error = "no reply from agent at " + socket_path;
    } else {
      r = parse_reply(reply);
    }
  }
  ::close(fd);
  return r;
}

}  // namespace ctrain
