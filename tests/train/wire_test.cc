// The agent protocol (framing, protobuf-JSON encoding, replies) against a tiny
// Unix-socket server in this test, and the environment parsing of init().
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <thread>

#include "ctrain/agent_wire.h"
#include "ctrain/env.h"
#include "ctrain/report.h"
#include "ctrain/config.h"
#include "ctrain/preemption.h"

namespace {

// Accepts one connection, reads one frame with its own (independent) framing
// code, answers with `reply` framed the same way.
class FakeAgent {
 public:
  explicit FakeAgent(std::string reply) : reply_(std::move(reply)) {
    path_ = "/tmp/ctrain_wire_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++);
    ::unlink(path_.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path_.c_str());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 1) == 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeAgent() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  // Raw bytes received: the 4-byte header and the payload.
  std::string header, payload;
  void join() { thread_.join(); }

 private:
  static bool read_n(int fd, std::string* out, size_t n) {
    out->assign(n, '\0');
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd, &(*out)[got], n - got);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }
  void serve() {
    int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    if (read_n(c, &header, 4)) {
      const auto* h = reinterpret_cast<const unsigned char*>(header.data());
      size_t n = (size_t(h[0]) << 24) | (size_t(h[1]) << 16) | (size_t(h[2]) << 8) | h[3];
      read_n(c, &payload, n);
      const uint32_t m = static_cast<uint32_t>(reply_.size());
      unsigned char rh[4] = {static_cast<unsigned char>(m >> 24), static_cast<unsigned char>(m >> 16),
                             static_cast<unsigned char>(m >> 8), static_cast<unsigned char>(m)};
      (void)!::write(c, rh, 4);
      (void)!::write(c, reply_.data(), reply_.size());
    }
    ::close(c);
  }
  static inline int counter_ = 0;
  std::string reply_, path_;
  int fd_ = -1;
  std::thread thread_;
};

ctrain::ReportMessage sample_message() {
  ctrain::ReportMessage m;
  m.job_id = "job-7";
  m.attempt = 2;
  m.rank = 0;
  m.values = {{"loss", 0.25}, {"accuracy", 0.9}, {"epoch", 3}};
  m.checkpoint = "/ckpt/checkpoint_000003";
  m.unix_ms = 1763766000000;
  return m;
}

}  // namespace

TEST_CASE("report JSON is the protobuf-JSON form with exact field names") {
  CHECK(ctrain::encode_report_json(sample_message()) ==
        "{\"job_id\":\"job-7\",\"attempt\":2,\"rank\":0,"
        "\"values\":{\"loss\":0.25,\"accuracy\":0.9,\"epoch\":3},"
        "\"checkpoint\":\"/ckpt/checkpoint_000003\",\"unix_ms\":\"1763766000000\"}");
}

TEST_CASE("numbers keep full precision and non-finite values stay valid JSON") {
  // Shortest text that reads back to the same double (up to 17 digits).
  CHECK(ctrain::json_number(0.1) == "0.1");
  CHECK(ctrain::json_number(0.1 + 0.2) == "0.30000000000000004");
  CHECK(std::strtod(ctrain::json_number(1.0 / 3).c_str(), nullptr) == 1.0 / 3);
  CHECK(ctrain::json_number(1e300) == "1e+300");
  CHECK(std::strtod(ctrain::json_number(2.0 / 3e-300).c_str(), nullptr) == 2.0 / 3e-300);
  CHECK(ctrain::json_number(-2) == "-2");
  CHECK(ctrain::json_number(std::nan("")) == "\"NaN\"");
  CHECK(ctrain::json_number(std::numeric_limits<double>::infinity()) == "\"Infinity\"");
  CHECK(ctrain::json_number(-std::numeric_limits<double>::infinity()) == "\"-Infinity\"");
}

TEST_CASE("strings are escaped") {
  CHECK(ctrain::json_string("a\"b\\c\nd\x01") == "\"a\\\"b\\\\c\\nd\\u0001\"");
  CHECK(ctrain::json_string("h\xc3\xa9") == "\"h\xc3\xa9\"");  // UTF-8 passes through
}

TEST_CASE("a frame is a 4-byte big-endian length then the payload") {
  std::string big(300, 'x');
  std::string f = ctrain::encode_frame(big);
  REQUIRE(f.size() == 304);
  CHECK(f.substr(0, 4) == std::string("\x00\x00\x01\x2c", 4));
  CHECK(f.substr(4) == big);
}

TEST_CASE("replies are parsed") {
  CHECK(ctrain::parse_reply("{\"ok\":true}").ok);
  CHECK(ctrain::parse_reply(" { \"ok\" : true } ").ok);
  auto r = ctrain::parse_reply("{\"ok\":false,\"error\":\"unknown job \\\"x\\\"\"}");
  CHECK_FALSE(r.ok);
  CHECK(r.error == "unknown job \"x\"");
  auto bad = ctrain::parse_reply("nonsense");
  CHECK_FALSE(bad.ok);
  CHECK(bad.error.find("malformed") != std::string::npos);
  CHECK_FALSE(ctrain::parse_reply("{\"error\":\"no ok field\"}").ok);
}

TEST_CASE("send_report delivers one frame and reads the agent's reply") {
  FakeAgent agent("{\"ok\":true}");
  auto msg = sample_message();
  auto reply = ctrain::send_report(agent.path(), msg);
  agent.join();
  CHECK(reply.ok);
  CHECK(reply.error.empty());
  const std::string json = ctrain::encode_report_json(msg);
  REQUIRE(agent.payload == json);
  const auto* h = reinterpret_cast<const unsigned char*>(agent.header.data());
  CHECK(((size_t(h[0]) << 24) | (size_t(h[1]) << 16) | (size_t(h[2]) << 8) | h[3]) == json.size());
}

TEST_CASE("an error reply and a missing agent are reported, not thrown") {
  {
    FakeAgent agent("{\"ok\":false,\"error\":\"job not running\"}");
    auto reply = ctrain::send_report(agent.path(), sample_message());
    agent.join();
    CHECK_FALSE(reply.ok);
    CHECK(reply.error == "job not running");
  }
  auto reply = ctrain::send_report("/nonexistent/ctrain.sock", sample_message());
  CHECK_FALSE(reply.ok);
  CHECK(reply.error.find("cannot connect") != std::string::npos);
}

TEST_CASE("report() on rank 0 sends job id, attempt and values from the environment") {
  ::setenv("CLUSTER_JOB_ID", "j-42", 1);
  ::setenv("CLUSTER_ATTEMPT", "1", 1);
  ::unsetenv("RANK");
  std::string socket_path;
  {
    FakeAgent agent("{\"ok\":true}");
    socket_path = agent.path();
    ::setenv("CLUSTER_AGENT_SOCKET", socket_path.c_str(), 1);
    CHECK(ctrain::report({{"epoch", 1}, {"loss", std::nan("")}}, "/c/checkpoint_000001"));
    agent.join();
    CHECK(agent.payload.rfind("{\"job_id\":\"j-42\",\"attempt\":1,\"rank\":0,"
                              "\"values\":{\"epoch\":1,\"loss\":\"NaN\"},"
                              "\"checkpoint\":\"/c/checkpoint_000001\",\"unix_ms\":\"", 0) == 0);
  }
  // The agent is gone now. Rank 1 does not even try (false = not delivered
  // by this call); rank 0 tries, warns on stderr and returns false, no throw.
  ::setenv("RANK", "1", 1);
  CHECK_FALSE(ctrain::report({{"epoch", 1}}));
  ::setenv("RANK", "0", 1);
  CHECK_NOTHROW(ctrain::report({{"epoch", 1}}));
  CHECK_FALSE(ctrain::report({{"epoch", 1}}));
  ::unsetenv("RANK");
  ::unsetenv("CLUSTER_AGENT_SOCKET");
}

namespace {
ctrain::DistEnv env_of(std::map<std::string, std::string> vars) {
  return ctrain::read_dist_env([vars](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}
}  // namespace

TEST_CASE("no distributed variables: one process alone") {
  auto e = env_of({});
  CHECK(e.world_size == 1);
  CHECK(e.rank == 0);
  CHECK_FALSE(e.distributed);
}

TEST_CASE("a full environment is read, with torchrun's defaults for the optional ones") {
  auto e = env_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.1"},
                   {"MASTER_PORT", "29500"}, {"LOCAL_WORLD_SIZE", "2"}, {"NODE_RANK", "1"}});
  CHECK(e.rank == 3);
  CHECK(e.world_size == 4);
  CHECK(e.local_rank == 1);
  CHECK(e.local_world_size == 2);
  CHECK(e.node_rank == 1);
  CHECK(e.master_addr == "10.0.0.1");
  CHECK(e.master_port == 29500);
}

TEST_CASE("a half-set environment names every missing variable") {
  try {
    env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
    FAIL("expected an exception");
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    // Exactly the two that are missing, not RANK or WORLD_SIZE which are set.
    CHECK(m.find("missing MASTER_ADDR, MASTER_PORT (") != std::string::npos);
  }
  CHECK_THROWS_WITH(env_of({{"LOCAL_RANK", "0"}}),
                    Catch::Contains("RANK") && Catch::Contains("WORLD_SIZE"));
}

TEST_CASE("bad values are refused with the variable's name") {
  std::map<std::string, std::string> base{
      {"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}};
  CHECK_THROWS_WITH(env_of(base), Catch::Contains("RANK='2'"));
  base["RANK"] = "0";
  base["MASTER_PORT"] = "70000";
  CHECK_THROWS_WITH(env_of(base), Catch::Contains("MASTER_PORT"));
  base["MASTER_PORT"] = "12x";
  CHECK_THROWS_WITH(env_of(base), Catch::Contains("MASTER_PORT='12x'"));
}

TEST_CASE("config: a job's CLUSTER_CONFIG read by key", "[config]") {
  auto c = ctrain::parse_config(R"( {"lr": 0.003, "hidden":128, "act":"re\"lu", "on": true, "grid": [1, {"a": 2}], "n": null} )");
  CHECK(c.at("lr") == "0.003");
  CHECK(c.at("hidden") == "128");
  CHECK(c.at("act") == "re\"lu");
  CHECK(c.at("on") == "true");
  CHECK(c.at("grid") == "[1,{\"a\":2}]");
  CHECK(c.at("n") == "null");
  CHECK(ctrain::parse_config("{}").empty());
  CHECK_THROWS_WITH(ctrain::parse_config("[1]"), Catch::Contains("not a JSON object"));
  CHECK_THROWS(ctrain::parse_config("{\"a\": 1"));
  CHECK_THROWS(ctrain::parse_config("{\"a\": }"));
  CHECK_THROWS_WITH(ctrain::parse_config("{\"a\": 1,}"),
                    Catch::Contains("not a JSON object: parse error at line 1, column 9: syntax error while parsing object key"));
}

TEST_CASE("preemption(): none without the node's file, its deadline once written, the new one when it changes",
          "[preemption]") {
  const std::string path = "/tmp/ctrain_preemption_test_" + std::to_string(::getpid());
  ::unlink(path.c_str());
  ::unsetenv("CLUSTER_PREEMPTION_FILE");
  CHECK_FALSE(ctrain::preemption().has_value());  // outside clusterd
  ::setenv("CLUSTER_PREEMPTION_FILE", path.c_str(), 1);
  CHECK_FALSE(ctrain::preemption().has_value());  // no notice
  auto write = [&](const std::string& text) {
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    REQUIRE(std::rename(tmp.c_str(), path.c_str()) == 0);  // as the node writes it: whole
  };
  write("1700000000123 job-0002\n");
  auto deadline = ctrain::preemption();
  REQUIRE(deadline.has_value());
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(deadline->time_since_epoch()).count() == 1700000000123);
  write("1700000060000 job-0003\n");  // a later notice: the same size, another inode
  deadline = ctrain::preemption();
  REQUIRE(deadline.has_value());
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(deadline->time_since_epoch()).count() == 1700000060000);
  ::unlink(path.c_str());
  ::unsetenv("CLUSTER_PREEMPTION_FILE");
}
