// The node agent's uploader of rank 0's results (daemon/agent/
// results_uploader.h) against a real store over gRPC.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include <grpcpp/create_channel.h>

#include "daemon/agent/results_uploader.h"
#include "store_server.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

// Found by exploratory testing: a checkpoint its program went on writing
// into for a moment after reporting it was given up at once, and the job
// ended with no checkpoint stored.
TEST_CASE("a checkpoint that changes while it is stored is tried again once it settles", "[results_uploader]") {
  StoreServer head;
  ClusterStorage storage(grpc::CreateChannel(head.address(), grpc::InsecureChannelCredentials()), StoreServer::kToken,
                         head.address());
  TempTree t;
  const std::string file = t.Path("ckpt/checkpoint_000000/w.bin");
  t.Write("ckpt/checkpoint_000000/w.bin", std::string(1 << 20, 'w'));
  t.Write("hashes/.keep", "");
  std::mutex mutex;
  std::vector<AgentMessage> stored;
  ResultsUploader uploader(
      &storage, t.Path("hashes"),
      [&](const AgentMessage& m) {
        std::lock_guard<std::mutex> lock(mutex);
        stored.push_back(m);
      },
      [](const AgentMessage&) {});
  // The program rewrites a piece of it, over and over, for 1.5 s.
  std::atomic<bool> writing{true};
  std::thread writer([&] {
    const auto until = std::chrono::steady_clock::now() + 1500ms;
    for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
      std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp((i * 4096) % (1 << 20));
      f << static_cast<char>('a' + i % 26);
      f.close();
      std::this_thread::sleep_for(1ms);
    }
    writing = false;
  });
  uploader.StoreCheckpoint("job-1", 0, t.Path("ckpt"), t.Path("ckpt/checkpoint_000000"), "");
  writer.join();
  bool done = false;
  for (int waited = 0; waited < 150 && !done; ++waited) {
    std::this_thread::sleep_for(100ms);
    std::lock_guard<std::mutex> lock(mutex);
    done = !stored.empty();
  }
  REQUIRE(done);
  std::lock_guard<std::mutex> lock(mutex);
  REQUIRE(stored.front().checkpoint_stored().name() == "checkpoint_000000");
  REQUIRE(stored.front().checkpoint_stored().bytes() == (1 << 20));
}
