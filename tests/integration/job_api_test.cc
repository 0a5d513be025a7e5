// The job-submission API on the dashboard port (daemon/http/job_api.h,
// package_upload.h) over real HTTP against a real head: writes need the
// token in the Authorization header, every refusal says why with its
// status, a submission_id is unique and finds its job, a package upload is
// checked against its id and bounded before its body is read.
#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "cluster.pb.h"
#include "common/sha256.h"
#include "harness.h"
#include "http_get.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// One request with a body; the whole response.
std::string Send(int port, const std::string& method, const std::string& target, const std::string& token,
                 const std::string& body, const std::string& extra_headers = "") {
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + extra_headers;
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return Exchange(ConnectLoopback(port), request, std::chrono::seconds(60));
}

bool StatusIs(const std::string& response, int status) {
  return response.rfind("HTTP/1.1 " + std::to_string(status), 0) == 0;
}

std::string Body(const std::string& response) {
  auto at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

std::string JobJson(const std::string& name, const std::string& command, const std::string& extra = "") {
  return R"({"name":")" + name + R"(","entrypoint":["/bin/sh","-c",")" + command +
         R"("],"num_workers":1,"resources_per_worker":{"amounts":{"CPU":1}})" + extra + "}";
}

bool JobIn(int port, const std::string& token, const std::string& id, const std::string& state) {
  return HttpGet(port, "/api/job?id=" + id, token).find("\"state\":\"" + state + "\"") != std::string::npos;
}

}  // namespace

TEST_CASE("job api: writes take the bearer token only, and refusals name the method, the key or the limit",
          "[dashboard][job_api]") {
  Cluster cluster;
  int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "2", "--dashboard-port", std::to_string(port)}).exit_code == 0);
  const std::string t = cluster.Token();
  const std::string spec = JobJson("api", "true");

  // No token, a wrong one, or the token in a cookie or the address: refused, no job made.
  REQUIRE(StatusIs(Send(port, "POST", "/api/jobs", "", spec), 401));
  REQUIRE(Send(port, "POST", "/api/jobs", "wrong", spec).find("wrong cluster token") != std::string::npos);
  const std::string cookie = Send(port, "POST", "/api/jobs", "", spec, "Cookie: clusterd_token=" + t + "\r\n");
  INFO(cookie);
  REQUIRE(StatusIs(cookie, 401));
  REQUIRE(cookie.find("Authorization: Bearer") != std::string::npos);
  REQUIRE(StatusIs(Send(port, "POST", "/api/jobs?token=" + t, "", spec), 401));
  REQUIRE(HttpGet(port, "/api/jobs", t).find("\"jobs\":[]") != std::string::npos);

  // A 405 says what the path takes.
  const std::string get_stop = HttpGet(port, "/api/job/stop?id=x", t);
  REQUIRE(StatusIs(get_stop, 405));
  REQUIRE(get_stop.find("Allow: POST\r\n") != std::string::npos);
  const std::string put_status = Send(port, "PUT", "/api/status", t, "{}");
  REQUIRE(StatusIs(put_status, 405));
  REQUIRE(put_status.find("Allow: GET, HEAD\r\n") != std::string::npos);
  REQUIRE(Send(port, "DELETE", "/api/jobs", t, "").find("Allow: GET, HEAD, POST\r\n") != std::string::npos);
  REQUIRE(StatusIs(Send(port, "OPTIONS", "/api/jobs", "", ""), 405));  // a CORS preflight fails

  // Bad specs: 400 naming what is wrong, and nothing submitted.
  std::string bad = Send(port, "POST", "/api/jobs", t, "{not json");
  REQUIRE(StatusIs(bad, 400));
  REQUIRE(bad.find("not a job spec") != std::string::npos);
  bad = Send(port, "POST", "/api/jobs", t, R"({"name":"x","entrypoint":["true"],"num_workers":1,"colour":"red"})");
  REQUIRE(StatusIs(bad, 400));
  REQUIRE(bad.find("colour") != std::string::npos);
  bad = Send(port, "POST", "/api/jobs", t, JobJson("", "true"));
  REQUIRE(StatusIs(bad, 400));
  REQUIRE(bad.find("key 'name'") != std::string::npos);
  bad = Send(port, "POST", "/api/jobs", t, JobJson("x", "true", R"(,"submission_id":"has space")"));
  REQUIRE(StatusIs(bad, 400));
  REQUIRE(bad.find("key 'submission_id'") != std::string::npos);
  bad = Send(port, "POST", "/api/jobs", t, JobJson("x", "true", R"(,"submission_id":"job-0007")"));
  REQUIRE(bad.find("job ids") != std::string::npos);
  bad = Send(port, "POST", "/api/jobs", t, JobJson("x", "true", R"(,"array":{"count":2})"));
  REQUIRE(StatusIs(bad, 400));
  REQUIRE(bad.find("key 'array'") != std::string::npos);
  bad = Send(port, "POST", "/api/jobs", t, JobJson("x", "true", R"(,"working_dir":"/nowhere")"));
  REQUIRE(StatusIs(bad, 400));
  REQUIRE(bad.find("names no package") != std::string::npos);
  bad = Send(port, "POST", "/api/jobs", t, JobJson("x", "true", R"(,"working_dir":"/w","package_id":")" +
                                                                  std::string(64, 'a') + "\""));
  INFO(bad);
  REQUIRE(StatusIs(bad, 409));
  REQUIRE(bad.find("not in the head's store") != std::string::npos);
  // A body past the limit (1 MiB) is refused before it is read.
  const std::string large = Exchange(ConnectLoopback(port),
                                     "POST /api/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer " +
                                         t + "\r\nContent-Length: 5000000\r\n\r\n",
                                     std::chrono::seconds(60));
  REQUIRE(StatusIs(large, 413));
  REQUIRE(HttpGet(port, "/api/jobs", t).find("\"jobs\":[]") != std::string::npos);
}

TEST_CASE("job api: a submission_id is unique and finds its job, which can be stopped and deleted",
          "[dashboard][job_api]") {
  Cluster cluster;
  int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "2", "--dashboard-port", std::to_string(port)}).exit_code == 0);
  const std::string t = cluster.Token();

  std::string made = Send(port, "POST", "/api/jobs", t, JobJson("hello", "echo hello-from-api",
                                                                R"(,"submission_id":"mine-1","metadata":{"who":"me"})"));
  INFO(made);
  REQUIRE(StatusIs(made, 200));
  // The head's id (job-0001, then its cluster's suffix), and the one chosen.
  const std::string first = Body(made).substr(11, Body(made).find('"', 11) - 11);
  REQUIRE(first.rfind("job-0001", 0) == 0);
  REQUIRE(Body(made) == R"({"job_id":")" + first + R"(","submission_id":"mine-1"})");
  std::string again = Send(port, "POST", "/api/jobs", t, JobJson("hello", "true", R"(,"submission_id":"mine-1")"));
  REQUIRE(StatusIs(again, 409));
  REQUIRE(again.find("'mine-1' is job " + first + "'s already") != std::string::npos);

  REQUIRE(WaitFor([&] { return JobIn(port, t, "mine-1", "SUCCEEDED"); }, std::chrono::seconds(60), std::chrono::milliseconds(100)));
  const std::string info = HttpGet(port, "/api/job?id=mine-1", t);
  REQUIRE(info.find("\"job_id\":\"" + first + "\"") != std::string::npos);
  REQUIRE(info.find("\"metadata\":{\"who\":\"me\"}") != std::string::npos);
  // The logs by submission id too.
  LogsReply logs;
  REQUIRE(google::protobuf::util::JsonStringToMessage(Body(HttpGet(port, "/api/logs?id=mine-1&rank=0&offset=0", t)),
                                                      &logs).ok());
  REQUIRE(logs.chunks_size() == 1);
  REQUIRE(logs.chunks(0).data().find("\nhello-from-api\n") != std::string::npos);
  REQUIRE(StatusIs(HttpGet(port, "/api/job?id=mine-2", t), 404));

  // Without a submission_id the head's id is the submission's.
  made = Send(port, "POST", "/api/jobs", t, JobJson("sleeper", "sleep 120"));
  const std::string sleeper = Body(made).substr(11, Body(made).find('"', 11) - 11);
  REQUIRE(sleeper.rfind("job-0002", 0) == 0);
  REQUIRE(Body(made) == R"({"job_id":")" + sleeper + R"(","submission_id":")" + sleeper + R"("})");
  REQUIRE(WaitFor([&] { return JobIn(port, t, sleeper, "RUNNING"); }, std::chrono::seconds(60), std::chrono::milliseconds(100)));
  std::string refused = Send(port, "DELETE", "/api/job?id=" + sleeper, t, "");
  REQUIRE(StatusIs(refused, 409));
  REQUIRE(refused.find("stop it first") != std::string::npos);
  std::string stopped = Send(port, "POST", "/api/job/stop?id=" + sleeper, t, "");
  REQUIRE(StatusIs(stopped, 200));
  REQUIRE(Body(stopped).rfind("{\"stopped\":true,", 0) == 0);
  REQUIRE(WaitFor([&] { return JobIn(port, t, sleeper, "STOPPED"); }, std::chrono::seconds(60), std::chrono::milliseconds(100)));
  REQUIRE(Body(Send(port, "POST", "/api/job/stop?id=" + sleeper, t, "")).rfind("{\"stopped\":false,", 0) == 0);
  REQUIRE(StatusIs(Send(port, "POST", "/api/job/stop?id=nobody", t, ""), 404));
  REQUIRE(StatusIs(Send(port, "POST", "/api/job/stop", t, ""), 400));

  std::string deleted = Send(port, "DELETE", "/api/job?id=mine-1", t, "");
  REQUIRE(StatusIs(deleted, 200));
  REQUIRE(Body(deleted).rfind("{\"deleted\":true,", 0) == 0);
  REQUIRE(StatusIs(HttpGet(port, "/api/job?id=mine-1", t), 404));
  // Its submission_id is free again.
  REQUIRE(StatusIs(Send(port, "POST", "/api/jobs", t, JobJson("hello", "true", R"(,"submission_id":"mine-1")")), 200));
}

TEST_CASE("job api: a package upload is checked against its id, bounded, and kept only whole",
          "[dashboard][job_api][store]") {
  Cluster cluster;
  int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port)}).exit_code == 0);
  const std::string t = cluster.Token();
  // Large enough to arrive in many pieces.
  std::string bytes;
  for (int i = 0; bytes.size() < 3 * 1024 * 1024; ++i) bytes += std::to_string(i) + "\n";
  Sha256 hash;
  hash.Update(bytes);
  const std::string id = hash.HexDigest();
  const std::string path = "/api/packages/" + id;

  std::string absent = HttpGet(port, path, t);
  REQUIRE(StatusIs(absent, 404));
  REQUIRE(absent.find("\"present\":false") != std::string::npos);
  REQUIRE(absent.find("\"max_bytes\":2147483648") != std::string::npos);
  REQUIRE(StatusIs(HttpGet(port, "/api/packages/nothex", t), 400));
  REQUIRE(StatusIs(HttpGet(port, path), 401));

  // Refused on its headers: no token, the cookie, no length, too large.
  REQUIRE(StatusIs(Send(port, "PUT", path, "", bytes), 401));
  REQUIRE(StatusIs(Send(port, "PUT", path, "", bytes, "Cookie: clusterd_token=" + t + "\r\n"), 401));
  const std::string chunked = Exchange(ConnectLoopback(port),
                                       "PUT " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer " +
                                           t + "\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                                       std::chrono::seconds(60));
  REQUIRE(StatusIs(chunked, 411));
  const std::string huge = Exchange(ConnectLoopback(port),
                                    "PUT " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer " +
                                        t + "\r\nContent-Length: 3000000000\r\n\r\n",
                                    std::chrono::seconds(60));
  REQUIRE(StatusIs(huge, 413));
  REQUIRE(huge.find("at most 2147483648") != std::string::npos);

  // The wrong bytes for the id: 400, and nothing kept.
  std::string wrong = bytes;
  wrong[1000] ^= 1;
  std::string mismatch = Send(port, "PUT", path, t, wrong);
  INFO(mismatch);
  REQUIRE(StatusIs(mismatch, 400));
  REQUIRE(mismatch.find("hash to") != std::string::npos);
  REQUIRE(StatusIs(HttpGet(port, path, t), 404));
  // A client that goes away midway leaves nothing either.
  {
    int fd = ConnectLoopback(port);
    std::string start = "PUT " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + t +
                        "\r\nContent-Length: " + std::to_string(bytes.size()) + "\r\n\r\n" + bytes.substr(0, 500000);
    REQUIRE(send(fd, start.data(), start.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(start.size()));
    close(fd);
  }
  // The right bytes: kept, and then found.
  std::string put = Send(port, "PUT", path, t, bytes);
  INFO(put);
  REQUIRE(StatusIs(put, 200));
  REQUIRE(put.find("\"size\":" + std::to_string(bytes.size())) != std::string::npos);
  std::string present = HttpGet(port, path, t);
  REQUIRE(StatusIs(present, 200));
  REQUIRE(present.find("\"present\":true") != std::string::npos);
  // Again: answered from its headers, the store has it.
  REQUIRE(StatusIs(Send(port, "PUT", path, t, bytes), 200));
  // curl's Expect: 100-continue gets its go-ahead.
  const std::string continued = Exchange(ConnectLoopback(port),
                                         "PUT /api/packages/" + std::string(64, 'b') + " HTTP/1.1\r\nHost: x\r\n"
                                         "Connection: close\r\nAuthorization: Bearer " + t +
                                         "\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
                                         std::chrono::seconds(60));
  REQUIRE(continued.rfind("HTTP/1.1 100 Continue\r\n", 0) == 0);
  REQUIRE(continued.find("HTTP/1.1 400") != std::string::npos);  // abc is not bbbb...
}
