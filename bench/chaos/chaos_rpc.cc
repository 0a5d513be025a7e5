// chaos_rpc: malformed requests to a head, for the chaos run (run on the
// simulated client machine, which can reach the head's address).
//   chaos_rpc ADDRESS TOKEN SEED CALLS [JOB_ID...]
// Each call is one of, at random (seeded):
//   raw      random bytes (sometimes after HTTP/2's preface) written to the
//            port, or to the agent port (found with Locate), sometimes after
//            a hello with a wrong token or a frame header claiming 4 GiB,
//            then the connection dropped;
//   generic  random bytes as the request of a real method (grpc::GenericStub),
//            with the token (HeadService, StoreService) or without (also
//            NodeAgentService.Locate);
//   typed    well-formed nonsense through the real stub: GetLogs with offsets
//            near INT64_MIN/MAX and absurd ranks, attempts and budgets (for
//            the JOB_IDs given, real jobs, half the time), unknown or garbage
//            job ids for GetJob/StopJob/DeleteJob/GetMetrics (real ones only
//            for GetJob and GetMetrics: stopping a real job would change its
//            outcome), bad page tokens and sizes, SubmitJob with specs that
//            must be refused, DrainNode/StopNode of unknown nodes;
// and once, halfway, a stalled upload: a PutBlob that announces 20 GiB (the
// head's whole store by default), sends one byte and holds the stream for a
// second before it goes away. The store must evict nothing for bytes that
// never came: the finished JOB_IDs' stored checkpoints and outputs are
// compared around it, and one that lost them prints "EVICTED <job id>" (a
// finding).
// A deadline of 3 s bounds every call. It prints one line of counts per
// outcome, and "ACCEPTED <what> <job id>" for a nonsense submission the head
// took (a finding). Exit 0 when all calls were made, 2 on bad arguments.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "agent.grpc.pb.h"
#include "cluster.grpc.pb.h"
#include "common/net/auth.h"
#include "common/net/frame_channel.h"
#include "common/job_state.h"
#include "store.grpc.pb.h"

namespace {

using Rng = std::mt19937_64;

std::string RandomBytes(Rng& rng, size_t max) {
  std::string out(std::uniform_int_distribution<size_t>(0, max)(rng), '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

template <typename T>
const T& Pick(Rng& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

void Deadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
}

// Random bytes straight onto the head's port; `prefix` first.
std::string RawCall(Rng& rng, const std::string& host, int port, std::string bytes) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "raw:connect-failed";
  }
  bytes += RandomBytes(rng, 4096);
  ssize_t sent = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  close(fd);
  return sent < 0 ? "raw:send-failed" : "raw:sent";
}

// The head's agent port, as an agent finds it; 0 when Locate fails.
int AgentPort(const std::shared_ptr<grpc::Channel>& channel, const std::string& token) {
  auto stub = clusterd::NodeAgentService::NewStub(channel);
  grpc::ClientContext context;
  Deadline(&context);
  clusterd::AttachToken(&context, token);
  clusterd::AgentEndpoint reply;
  return stub->Locate(&context, clusterd::LocateRequest(), &reply).ok() ? reply.port() : 0;
}

// What goes before the random bytes on the agent port: nothing, a hello
// with a wrong token, or a frame header claiming 4 GiB.
std::string AgentPortPrefix(Rng& rng) {
  switch (rng() % 3) {
    case 0: {
      clusterd::AgentMessage hello;
      hello.mutable_hello()->set_token("not-the-token");
      return clusterd::EncodeFrame(hello);
    }
    case 1: return std::string("\xff\xff\xff\xff", 4);
    default: return "";
  }
}

std::string GenericCall(Rng& rng, const std::shared_ptr<grpc::Channel>& channel, const std::string& token) {
  static const std::vector<std::string> kHead = {
      "/clusterd.HeadService/GetStatus", "/clusterd.HeadService/DrainNode", "/clusterd.HeadService/StopNode",
      "/clusterd.HeadService/SubmitJob", "/clusterd.HeadService/ListJobs",  "/clusterd.HeadService/GetJob",
      "/clusterd.HeadService/StopJob",   "/clusterd.HeadService/GetLogs",   "/clusterd.HeadService/GetMetrics",
      "/clusterd.HeadService/DeleteJob", "/clusterd.StoreService/StatBlob", "/clusterd.StoreService/PutBlob",
      "/clusterd.StoreService/GetBlob",  "/clusterd.StoreService/MissingBlobs", "/clusterd.HeadService/NoSuchMethod"};
  bool with_token = rng() % 3 != 0;
  std::string method = with_token || rng() % 4 ? Pick(rng, kHead) : "/clusterd.NodeAgentService/Locate";
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  Deadline(&context);
  if (with_token) clusterd::AttachToken(&context, token);
  std::string bytes = RandomBytes(rng, 2048);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1), response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
    std::lock_guard<std::mutex> lock(mu);
    status = std::move(s);
    done = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return "generic:" + std::to_string(status.error_code());
}

clusterd::JobSpec NonsenseSpec(Rng& rng, std::string* what) {
  clusterd::JobSpec spec;
  spec.set_name("chaos-nonsense");
  spec.add_entrypoint("/bin/true");
  spec.set_num_workers(1);
  (*spec.mutable_resources_per_worker()->mutable_amounts())["CPU"] = 1;
  switch (rng() % 6) {
    case 0: *what = "num_workers=-1"; spec.set_num_workers(-1); break;
    case 1: *what = "num_workers=INT_MAX"; spec.set_num_workers(INT_MAX); break;
    case 2: *what = "no entrypoint"; spec.clear_entrypoint(); break;
    case 3: *what = "CPU=-5"; (*spec.mutable_resources_per_worker()->mutable_amounts())["CPU"] = -5; break;
    case 4: *what = "max_failures=-3"; spec.set_max_failures(-3); break;
    default: *what = "env CLUSTER_TOKEN"; (*spec.mutable_env())["CLUSTER_TOKEN"] = "x"; break;
  }
  return spec;
}

std::string TypedCall(Rng& rng, clusterd::HeadService::Stub& stub, const std::string& token,
                      const std::vector<std::string>& real_ids, std::string* accepted) {
  grpc::ClientContext context;
  Deadline(&context);
  clusterd::AttachToken(&context, token);
  std::string garbage_id = rng() % 2 ? "job-does-not-exist-" + std::to_string(rng() % 1000) : RandomBytes(rng, 64);
  std::string real_id = !real_ids.empty() && rng() % 2 ? Pick(rng, real_ids) : garbage_id;
  grpc::Status status;
  std::string name;
  switch (rng() % 8) {
    case 0: {
      name = "GetLogs";
      clusterd::LogsRequest request;
      request.set_job_id(rng() % 4 ? real_id : "");
      static const std::vector<int64_t> kOffsets = {INT64_MIN, INT64_MIN + 1, -1, INT64_MAX, INT64_MAX - 1};
      (*request.mutable_offsets())[static_cast<int32_t>(rng())] = Pick(rng, kOffsets);
      request.set_rank(static_cast<int32_t>(rng()));
      request.set_attempt(static_cast<int32_t>(rng()));
      request.set_max_bytes(static_cast<int64_t>(rng()));
      request.set_start_rank(static_cast<int32_t>(rng()));
      clusterd::LogsReply reply;
      status = stub.GetLogs(&context, request, &reply);
      break;
    }
    case 1: case 2: {
      clusterd::JobRequest request;
      request.set_job_id(garbage_id);
      int which = static_cast<int>(rng() % 4);
      if (which == 0 || which == 3) request.set_job_id(real_id);
      request.set_page_size(static_cast<int32_t>(rng()));
      request.set_page_token(RandomBytes(rng, 64));
      clusterd::JobInfo info;
      clusterd::MetricsReply metrics;
      switch (which) {
        case 0: name = "GetJob"; status = stub.GetJob(&context, request, &info); break;
        case 1: name = "StopJob"; status = stub.StopJob(&context, request, &info); break;
        case 2: name = "DeleteJob"; status = stub.DeleteJob(&context, request, &info); break;
        default: name = "GetMetrics"; status = stub.GetMetrics(&context, request, &metrics); break;
      }
      break;
    }
    case 3: {
      name = "ListJobs";
      clusterd::ListJobsRequest request;
      request.set_page_size(static_cast<int32_t>(rng()));
      request.set_page_token(RandomBytes(rng, 64));
      clusterd::ListJobsReply reply;
      status = stub.ListJobs(&context, request, &reply);
      break;
    }
    case 4: case 5: {
      name = "SubmitJob";
      std::string what;
      clusterd::SubmitJobRequest request;
      *request.mutable_spec() = NonsenseSpec(rng, &what);
      clusterd::SubmitJobReply reply;
      status = stub.SubmitJob(&context, request, &reply);
      if (status.ok()) *accepted += "ACCEPTED " + what + " " + reply.job_id() + "\n";
      break;
    }
    default: {
      name = rng() % 2 ? "DrainNode" : "StopNode";
      clusterd::NodeRequest request;
      request.set_node("no-such-node-" + std::to_string(rng() % 1000));
      clusterd::NodeReply reply;
      status = name == "DrainNode" ? stub.DrainNode(&context, request, &reply) : stub.StopNode(&context, request, &reply);
      break;
    }
  }
  return "typed:" + name + ":" + std::to_string(status.error_code());
}

// What the store keeps of each finished job: its stored checkpoints, and 1
// more for its outputs.
std::map<std::string, int> KeptData(clusterd::HeadService::Stub& stub, const std::string& token,
                                    const std::vector<std::string>& ids) {
  std::map<std::string, int> kept;
  for (const std::string& id : ids) {
    grpc::ClientContext context;
    Deadline(&context);
    clusterd::AttachToken(&context, token);
    clusterd::JobRequest request;
    request.set_job_id(id);
    clusterd::JobInfo info;
    if (!stub.GetJob(&context, request, &info).ok() || !clusterd::IsTerminal(info.state())) continue;
    kept[id] = info.stored_checkpoints_size() + (info.outputs_manifest().empty() ? 0 : 1);
  }
  return kept;
}

std::string StalledPut(const std::shared_ptr<grpc::Channel>& channel, clusterd::HeadService::Stub& head,
                       const std::string& token, const std::vector<std::string>& real_ids, std::string* evicted) {
  const std::map<std::string, int> before = KeptData(head, token, real_ids);
  auto store = clusterd::StoreService::NewStub(channel);
  grpc::ClientContext context;
  Deadline(&context);
  clusterd::AttachToken(&context, token);
  clusterd::BlobInfo reply;
  auto put = store->PutBlob(&context, &reply);
  clusterd::BlobChunk chunk;
  chunk.set_id(std::string(64, 'e'));  // bytes nobody will send
  chunk.set_size(int64_t{20480} << 20);
  chunk.set_data("x");
  put->Write(chunk);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  context.TryCancel();
  const grpc::Status status = put->Finish();
  const std::map<std::string, int> after = KeptData(head, token, real_ids);
  for (const auto& [id, count] : before) {
    auto it = after.find(id);
    const int now = it == after.end() ? -1 : it->second;
    if (now < count) *evicted += "EVICTED " + id + " kept " + std::to_string(count) + " now " + std::to_string(now) + "\n";
  }
  return "stall:" + std::to_string(status.error_code());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: chaos_rpc ADDRESS TOKEN SEED CALLS [JOB_ID...]\n";
    return 2;
  }
  const std::string address = argv[1], token = argv[2];
  Rng rng(std::stoull(argv[3]));
  const int calls = std::stoi(argv[4]);
  const std::vector<std::string> real_ids(argv + 5, argv + argc);
  auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << "chaos_rpc: ADDRESS must be HOST:PORT, got '" << address << "'\n";
    return 2;
  }
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = clusterd::HeadService::NewStub(channel);
  const std::string host = address.substr(0, colon);
  const int port = std::stoi(address.substr(colon + 1));
  const int agent_port = AgentPort(channel, token);
  std::map<std::string, int> outcomes;
  std::string accepted;
  for (int i = 0; i < calls; ++i) {
    if (i == calls / 2) ++outcomes[StalledPut(channel, *stub, token, real_ids, &accepted)];
    switch (rng() % 3) {
      case 0:
        if (agent_port > 0 && rng() % 2) {
          ++outcomes["agent-" + RawCall(rng, host, agent_port, AgentPortPrefix(rng))];
        } else {
          ++outcomes[RawCall(rng, host, port, rng() % 2 ? std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") : "")];
        }
        break;
      case 1: ++outcomes[GenericCall(rng, channel, token)]; break;
      default: ++outcomes[TypedCall(rng, *stub, token, real_ids, &accepted)]; break;
    }
  }
  std::cout << accepted << "chaos_rpc: " << calls << " calls:";
  for (const auto& [what, n] : outcomes) std::cout << " " << what << "=" << n;
  std::cout << std::endl;
  return 0;
}
