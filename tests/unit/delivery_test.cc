// Kept messages (a rank's exit, a stored checkpoint) survive a head that
// dies after their bytes left the agent: the head confirms them (Delivered)
// only once its journal synced what they changed, and the agent's HeadLink
// sends whatever is unconfirmed again after each registration.
#include <catch2/catch.hpp>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "agent.grpc.pb.h"
#include "agent_head_server.h"
#include "common/net/frame_channel.h"
#include "frame_test_util.h"
#include "daemon/agent/head_link.h"
#include "head_harness.h"
#include "manual_syncing.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

AgentMessage ExitOf(const std::string& job, int64_t delivery_seq) {
  AgentMessage m;
  m.mutable_rank_exited()->set_job_id(job);
  m.mutable_rank_exited()->set_attempt(0);
  m.mutable_rank_exited()->set_rank(0);
  m.mutable_rank_exited()->set_exit_code(0);
  m.set_delivery_seq(delivery_seq);
  return m;
}

}  // namespace

TEST_CASE("the head confirms kept exits at its tick once its journal synced them", "[delivery]") {
  QuietLogs quiet;
  Harness h;
  ManualSyncing syncing;
  h.head->jobs().set_journal_syncing(syncing.Hooks());
  h.AddNode("n1", 4);
  std::string a = h.Submit(1, 1, PACK), b = h.Submit(1, 1, PACK), c = h.Submit(1, 1, PACK);
  syncing.RunLoop();
  syncing.FinishSyncs();
  REQUIRE(h.Launches("n1").size() == 3);
  const FakeAgentConnection& agent = *h.agents["n1"];

  h.From("n1", ExitOf(a, 1));
  h.From("n1", ExitOf(b, 2));
  REQUIRE(h.Job(b).state() == SUCCEEDED);
  syncing.RunLoop();
  syncing.FinishSyncs();
  REQUIRE(agent.DeliveredUpTo().empty());  // synced, but answered at the tick
  h.head->Tick();
  syncing.RunLoop();
  syncing.FinishSyncs();
  REQUIRE(agent.DeliveredUpTo() == std::vector<int64_t>{2});  // one answer for both

  // Written but not yet synced at the tick: answered once the sync is
  // done. One that comes while that answer waits is asked for at the tick
  // after it.
  h.From("n1", ExitOf(c, 3));
  h.head->Tick();
  REQUIRE(agent.DeliveredUpTo().size() == 1);
  std::string d = h.Submit(1, 1, PACK);
  h.From("n1", ExitOf(d, 4));
  h.head->Tick();  // the answer for 3 still waits: 4 stays due
  syncing.RunLoop();
  syncing.FinishSyncs();
  REQUIRE(agent.DeliveredUpTo() == std::vector<int64_t>{2, 3});
  h.head->Tick();
  syncing.RunLoop();
  syncing.FinishSyncs();
  REQUIRE(agent.DeliveredUpTo() == std::vector<int64_t>{2, 3, 4});

  // Nothing new, or an ordinary message (no delivery_seq): no answer.
  AgentMessage beat;
  beat.mutable_heartbeat()->set_seq(9);
  h.From("n1", beat);
  h.head->Tick();
  syncing.RunLoop();
  syncing.FinishSyncs();
  REQUIRE(agent.DeliveredUpTo().size() == 3);
}

TEST_CASE("a flood of kept messages is confirmed without waiting for the tick", "[delivery]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("n1", 4);
  for (int64_t seq = 1; seq <= HeadCore::kEagerDeliveries; ++seq) {
    AgentMessage unknown = ExitOf("job-that-never-was", seq);
    h.From("n1", unknown);  // ignored by the jobs, still confirmed
  }
  REQUIRE(h.agents["n1"]->DeliveredUpTo() == std::vector<int64_t>{HeadCore::kEagerDeliveries});
}

TEST_CASE("a head whose journal sync failed confirms nothing, and a stream gone by then gets nothing", "[delivery]") {
  QuietLogs quiet;
  for (bool fail_sync : {true, false}) {
    Harness h;
    ManualSyncing syncing;
    h.head->jobs().set_journal_syncing(syncing.Hooks());
    h.AddNode("n1", 4);
    std::string a = h.Submit(1, 1, PACK);
    syncing.RunLoop();
    syncing.FinishSyncs();
    std::shared_ptr<FakeAgentConnection> agent = h.agents["n1"];

    h.store.set_fail_syncs(fail_sync);
    h.From("n1", ExitOf(a, 1));
    REQUIRE(h.Job(a).state() == SUCCEEDED);
    h.head->Tick();
    if (!fail_sync) h.head->OnAgentDisconnected(agent.get(), "test");
    syncing.RunLoop();
    syncing.FinishSyncs();
    INFO("fail_sync=" << fail_sync);
    REQUIRE(agent->DeliveredUpTo().empty());  // the agent keeps exit 1 and sends it again
  }
}

namespace {

// A head at the protocol level, scripted per stream, for what the real one
// cannot be stopped in the middle of: a stream that ends right after a kept
// message arrived, before anything confirmed it (a head SIGKILLed between
// reading an exit and syncing its journal). It answers Locate on its gRPC
// port and reads the agent port's frames with blocking sockets, a thread
// per stream.
class ScriptedHead final : public NodeAgentService::Service {
 public:
  struct Stream {
    std::vector<AgentMessage> got;  // after the registration, heartbeats left out
  };

  ScriptedHead() {
    listener_ = ListenOnLoopback(&wire_port_);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~ScriptedHead() {
    shutdown(listener_, SHUT_RDWR);
    acceptor_.join();
    close(listener_);
    EndStreams();
    for (std::thread& t : streams_threads_) t.join();
    for (int fd : open_) close(fd);
  }

  grpc::Status Locate(grpc::ServerContext*, const LocateRequest*, AgentEndpoint* reply) override {
    reply->set_port(wire_port_);
    return grpc::Status::OK;
  }

  // Ends every open stream, as a head that went away would.
  void EndStreams() {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_) shutdown(fd, SHUT_RDWR);
  }

  std::atomic<bool> answers{true};  // false: reads on, never confirms nor ends a stream

  std::vector<Stream> streams() {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_;
  }

 private:
  static bool ReadAll(int fd, char* data, size_t size) {
    while (size > 0) {
      ssize_t n = read(fd, data, size);
      if (n <= 0) return false;
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }
  static bool Read(int fd, AgentMessage* message) {
    unsigned char header[kFrameHeaderBytes];
    if (!ReadAll(fd, reinterpret_cast<char*>(header), sizeof header)) return false;
    std::string body((uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) | (uint32_t{header[2]} << 8) |
                         header[3], '\0');
    return ReadAll(fd, body.data(), body.size()) && message->ParseFromString(body);
  }
  static void Write(int fd, const HeadMessage& message) {
    std::string frame = EncodeFrame(message);
    (void)!write(fd, frame.data(), frame.size());
  }

  void AcceptLoop() {
    while (true) {
      int fd = accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard<std::mutex> lock(mu_);
      open_.push_back(fd);
      streams_threads_.emplace_back([this, fd] {
        Serve(fd);
        shutdown(fd, SHUT_RDWR);
      });
    }
  }

  void Serve(int fd) {
    AgentMessage message;
    if (!Read(fd, &message) || !message.has_hello()) return;
    if (!Read(fd, &message) || !message.has_register_()) return;
    size_t index;
    {
      std::lock_guard<std::mutex> lock(mu_);
      index = streams_.size();
      streams_.emplace_back();
    }
    HeadMessage registered;
    registered.mutable_registered()->set_node_id("node-1");
    registered.mutable_registered()->set_name("n1");
    registered.mutable_registered()->set_incarnation(static_cast<int64_t>(index) + 1);
    Write(fd, registered);
    while (Read(fd, &message)) {
      if (message.has_heartbeat()) continue;
      {
        std::lock_guard<std::mutex> lock(mu_);
        streams_[index].got.push_back(message);
      }
      if (message.delivery_seq() == 0) continue;
      if (!answers) continue;  // a head whose journal cannot be written
      if (index == 0) return;  // the head died before its journal had it
      HeadMessage delivered;
      delivered.mutable_delivered()->set_up_to_seq(message.delivery_seq());
      Write(fd, delivered);
    }
  }

  int listener_ = -1;
  int wire_port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> open_;  // closed by the destructor, after their threads
  std::vector<std::thread> streams_threads_;
  std::vector<Stream> streams_;
};

// The scripted head's Locate on loopback `wanted` (0: any port), the port it got in *port.
std::unique_ptr<grpc::Server> Serve(ScriptedHead* head, int wanted, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(wanted), grpc::InsecureServerCredentials(), port);
  builder.RegisterService(head);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server);
  return server;
}

}  // namespace

TEST_CASE("an exit the head took but never confirmed goes again after the next registration, once", "[delivery]") {
  QuietLogs quiet;
  ScriptedHead head;
  int port = 0;
  std::unique_ptr<grpc::Server> server = Serve(&head, 0, &port);

  std::atomic<int> registrations{0};
  std::unique_ptr<HeadLink> link_owner = QuickLink(port, &registrations);
  HeadLink& link = *link_owner;
  REQUIRE(link.Start(10'000).ok());

  AgentMessage log;
  log.mutable_log()->set_job_id("job-1");
  AgentMessage exit = ExitOf("job-1", 0);  // the link numbers it
  REQUIRE(link.Send(log));
  REQUIRE(link.Send(exit));
  // The first stream ends as soon as the exit arrived; the second gets it
  // again, first thing, and confirms it.
  REQUIRE(Eventually([&] { return registrations == 2 && link.undelivered() == 0; }));
  std::vector<ScriptedHead::Stream> streams = head.streams();
  REQUIRE(streams.size() == 2);
  REQUIRE(streams[0].got.size() == 2);
  REQUIRE(streams[0].got[0].has_log());
  REQUIRE(streams[0].got[1].rank_exited().job_id() == "job-1");
  REQUIRE(streams[0].got[1].delivery_seq() == 1);
  REQUIRE(streams[1].got.size() == 1);  // not the log: only kept messages go again
  REQUIRE(streams[1].got[0].rank_exited().job_id() == "job-1");
  REQUIRE(streams[1].got[0].delivery_seq() == 1);

  // A confirmed exit does not go again on a later stream; the next kept
  // message is numbered on.
  server->Shutdown(std::chrono::system_clock::now());
  server->Wait();
  server.reset();
  head.EndStreams();
  REQUIRE(Eventually([&] { return !link.connected(); }));
  server = Serve(&head, port, &port);
  REQUIRE(Eventually([&] { return registrations == 3 && link.connected(); }));
  AgentMessage checkpoint, started, started_with_port;
  checkpoint.mutable_checkpoint_stored()->set_job_id("job-2");
  started.mutable_rank_started()->set_job_id("job-3");
  started_with_port.mutable_rank_started()->set_job_id("job-4");
  started_with_port.mutable_rank_started()->set_master_port(29500);
  REQUIRE(link.Send(checkpoint));
  REQUIRE(link.Send(started));  // the registration's live ranks cover it: not kept
  REQUIRE(link.Send(started_with_port));
  REQUIRE(Eventually([&] { return link.undelivered() == 0 && head.streams().size() == 3 &&
                                  head.streams()[2].got.size() == 3; }));
  streams = head.streams();
  REQUIRE(streams[2].got[0].checkpoint_stored().job_id() == "job-2");
  REQUIRE(streams[2].got[0].delivery_seq() == 2);
  REQUIRE(streams[2].got[1].delivery_seq() == 0);
  REQUIRE(streams[2].got[2].rank_started().master_port() == 29500);
  REQUIRE(streams[2].got[2].delivery_seq() == 3);
  link.Stop();
  server->Shutdown(std::chrono::system_clock::now());
}

TEST_CASE("an agent whose head never confirms keeps at most its cap of kept messages", "[delivery]") {
  QuietLogs quiet;
  ScriptedHead head;
  head.answers = false;
  int port = 0;
  std::unique_ptr<grpc::Server> server = Serve(&head, 0, &port);
  std::atomic<int> registrations{0};
  std::unique_ptr<HeadLink> link = QuickLink(port, &registrations);
  REQUIRE(link->Start(10'000).ok());
  const int sent = static_cast<int>(HeadLink::kMaxUndelivered) + 10;
  int accepted = 0;
  for (int i = 0; i < sent; ++i) accepted += link->Send(ExitOf(fmt::format("job-{}", i), 0)) ? 1 : 0;
  REQUIRE(accepted == sent);
  REQUIRE(link->undelivered() == HeadLink::kMaxUndelivered);
  // Every one still went out: only the agent's copy of the oldest is gone.
  REQUIRE(Eventually([&] { return !head.streams().empty() && head.streams()[0].got.size() == static_cast<size_t>(sent); }));
  link->Stop();
  server->Shutdown(std::chrono::system_clock::now());
}

