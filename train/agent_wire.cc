#include "ctrain/agent_wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ctrain {

std::string json_number(double v) {
  if (std::isnan(v)) return "\"NaN\"";
  if (std::isinf(v)) return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  // Shortest of %.15g..%.17g that reads back exactly: 0.25 stays "0.25"
  // instead of %.17g's noise, and no precision is ever lost.
  char buf[40];
  for (int prec = 15; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", c);
          out += esc;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string encode_report_json(const ReportMessage& m) {
  std::string j = "{\"job_id\":" + json_string(m.job_id) +
                  ",\"attempt\":" + std::to_string(m.attempt) +
                  ",\"rank\":" + std::to_string(m.rank) + ",\"values\":{";
  for (size_t i = 0; i < m.values.size(); ++i) {
    if (i) j += ',';
    j += json_string(m.values[i].first) + ':' + json_number(m.values[i].second);
  }
  j += "},\"checkpoint\":" + json_string(m.checkpoint) +
       ",\"unix_ms\":\"" + std::to_string(m.unix_ms) + "\"}";
  return j;
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

namespace {

// Skips JSON whitespace.
size_t skip_ws(const std::string& s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  return i;
}

// Reads a JSON string starting at s[i] == '"'; returns the index after it, or npos.
size_t read_string(const std::string& s, size_t i, std::string* out) {
  if (i >= s.size() || s[i] != '"') return std::string::npos;
  out->clear();
  for (++i; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') return i + 1;
    if (c != '\\') { *out += c; continue; }
    if (++i >= s.size()) return std::string::npos;
    switch (s[i]) {
      case 'n': *out += '\n'; break;
      case 't': *out += '\t'; break;
      case 'r': *out += '\r'; break;
      case 'b': *out += '\b'; break;
      case 'f': *out += '\f'; break;
      case 'u':  // keep \uXXXX escapes readable rather than decoding them
        *out += "\\u";
        break;
      default: *out += s[i];
    }
  }
  return std::string::npos;
}

}  // namespace

AgentReply parse_reply(const std::string& json) {
  // The reply is a flat object; walk its members and pick "ok" and "error".
  AgentReply r;
  bool have_ok = false;
  size_t i = skip_ws(json, 0);
  auto bad = [&]() {
    AgentReply b;
    b.error = "malformed agent reply: " + json.substr(0, 200);
    return b;
  };
  if (i >= json.size() || json[i] != '{') return bad();
  i = skip_ws(json, i + 1);
  while (i < json.size() && json[i] != '}') {
    std::string key, sval;
    i = read_string(json, i, &key);
    if (i == std::string::npos) return bad();
    i = skip_ws(json, i);
    if (i >= json.size() || json[i] != ':') return bad();
    i = skip_ws(json, i + 1);
    if (i < json.size() && json[i] == '"') {
      i = read_string(json, i, &sval);
      if (i == std::string::npos) return bad();
      if (key == "error") r.error = sval;
    } else {
      size_t end = i;
      while (end < json.size() && json[end] != ',' && json[end] != '}') ++end;
      std::string lit = json.substr(i, end - i);
      while (!lit.empty() && (lit.back() == ' ' || lit.back() == '\n')) lit.pop_back();
      if (key == "ok") {
        if (lit == "true") r.ok = true;
        else if (lit == "false") r.ok = false;
        else return bad();
        have_ok = true;
      }
      i = end;
    }
    i = skip_ws(json, i);
    if (i < json.size() && json[i] == ',') i = skip_ws(json, i + 1);
  }
  if (i >= json.size() || !have_ok) return bad();
  if (!r.ok && r.error.empty()) r.error = "agent refused the report without a reason";
  if (r.ok) r.error.clear();
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
