// The framed protocol between a training program and its local clusterd agent
// (DESIGN.md rule 9). No libtorch here: plain POSIX sockets.
//
// One frame = 4-byte big-endian unsigned payload length, then the payload, a
// UTF-8 JSON object. The program sends the protobuf-JSON form of a metrics
// report and reads one reply frame, {"ok":true} or {"ok":false,"error":"..."}.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ctrain {

// Metric name -> value, in the order the caller gave them.
using Metrics = std::vector<std::pair<std::string, double>>;

struct ReportMessage {
  std::string job_id;
  int64_t attempt = 0;
  int rank = 0;
  Metrics values;
  std::string checkpoint;  // empty when the report has no checkpoint
  int64_t unix_ms = 0;
};

// Frames larger than this are refused on read (a reply is a few bytes; this
// only guards against reading garbage as a huge length).
constexpr uint32_t kMaxFrameBytes = 16u << 20;

// A double as protobuf JSON accepts it: a whole number below 2^53 without a
// fraction ("3"), any other the shortest decimal that reads back to the same
// bits; NaN and infinities as the strings "NaN", "Infinity", "-Infinity".
std::string json_number(double v);
// A JSON string literal, quotes included. UTF-8 passes through; a byte that
// starts no UTF-8 character becomes U+FFFD.
std::string json_string(const std::string& s);
// {"job_id":..,"attempt":..,"rank":..,"values":{..},"checkpoint":..,"unix_ms":".."}
// unix_ms is a JSON string because protobuf JSON writes int64 that way.
std::string encode_report_json(const ReportMessage& msg);
// 4-byte big-endian length + payload.
std::string encode_frame(const std::string& payload);

struct AgentReply {
  bool ok = false;
  std::string error;  // set when !ok: the agent's error or a socket problem
};

// Reads {"ok":true} / {"ok":false,"error":"..."}; anything else is !ok with a
// message saying the reply was malformed.
AgentReply parse_reply(const std::string& json);

// Connects to the Unix socket, sends one report frame, reads one reply frame.
// Never throws: connection, timeout and protocol problems come back as !ok.
AgentReply send_report(const std::string& socket_path, const ReportMessage& msg,
                       int timeout_ms = 5000);

// Low-level helpers shared with tests (and a fake agent): blocking, with the
// socket's own timeouts; return false on EOF/error.
bool write_frame(int fd, const std::string& payload);
bool read_frame(int fd, std::string* payload);

}  // namespace ctrain
