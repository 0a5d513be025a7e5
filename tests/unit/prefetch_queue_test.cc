// PrefetchQueue: the hand-over both prefetching downloads (the head's store
// and S3) share between their receiving thread and their consumer.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "common/prefetch_queue.h"

using namespace clusterd;

TEST_CASE("a prefetch queue hands pieces over in order and then the receiver's status", "[download]") {
  PrefetchQueue queue(2);
  std::thread receiver([&] {
    for (const char* piece : {"one", "", "two", "three"}) REQUIRE(queue.Push(piece));
    queue.End(Status::Corruption("bad hash"));
  });
  std::string_view piece;
  std::string got;
  for (;;) {
    Status next = queue.Next(&piece);
    if (!next.ok()) {
      CHECK(next.code() == Status::Code::kCorruption);
      break;
    }
    REQUIRE_FALSE(piece.empty());  // an empty piece is never queued; the end comes as the status
    got += std::string(piece) + ",";
  }
  receiver.join();
  CHECK(got == "one,two,three,");
  CHECK(queue.Next(&piece).code() == Status::Code::kCorruption);
  CHECK(piece.empty());
}

TEST_CASE("a prefetch queue's receiver runs at most its depth ahead and reuses given-back buffers", "[download]") {
  PrefetchQueue queue(2);
  std::atomic<int> pushed{0};
  std::thread receiver([&] {
    for (int i = 0; i < 5; ++i) {
      std::string buffer = queue.TakeFree().value_or(std::string());
      CHECK(buffer.empty());
      buffer = std::string(1000, static_cast<char>('a' + i));
      if (!queue.Push(std::move(buffer))) return;
      ++pushed;
    }
    queue.End(Status::Ok());
  });
  // Generous outer bound: the receiver fills the queue and then waits.
  for (int i = 0; i < 200 && pushed < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(pushed == 2);

  std::string_view piece;
  REQUIRE(queue.Next(&piece).ok());
  CHECK(piece == std::string(1000, 'a'));
  REQUIRE(queue.Drain().ok());
  receiver.join();
  CHECK(pushed == 5);
  // The buffers handed back are there for the next receiver's pieces, empty.
  auto reused = queue.TakeFree();
  REQUIRE(reused.has_value());
  CHECK(reused->empty());
  CHECK(reused->capacity() >= 1000);
}

TEST_CASE("stopping a prefetch queue frees a receiver waiting for room", "[download]") {
  PrefetchQueue queue(1);
  REQUIRE(queue.Push("first"));
  std::atomic<bool> refused{false};
  std::thread receiver([&] { refused = !queue.Push("second"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  queue.Stop();
  receiver.join();  // would hang without Stop's wake-up
  CHECK(refused);
  CHECK_FALSE(queue.Push("third"));
}
