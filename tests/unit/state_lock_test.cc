// One head per state folder, and a restart that waits out the old head's exit.
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fcntl.h>
#include <thread>

#include "daemon/head/state_lock.h"
#include "temp_tree.h"

using namespace clusterd;
using clusterd::testing::TempTree;
using namespace std::chrono_literals;

namespace {

// Another open file description of the lock, as another head would hold it.
int HoldLock(const std::string& dir) {
  int fd = open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(flock(fd, LOCK_EX | LOCK_NB) == 0);
  return fd;
}

}  // namespace

TEST_CASE("a held state folder is refused after the wait, naming the folder", "[state_lock]") {
  TempTree tree;
  int other = HoldLock(tree.root());
  auto start = std::chrono::steady_clock::now();
  auto lock = LockStateFolder(tree.root(), 100ms);
  REQUIRE_FALSE(lock.ok());
  REQUIRE(lock.status().code() == Status::Code::kFailedPrecondition);
  REQUIRE(lock.status().message().find("another clusterd head is running with its state in " + tree.root()) !=
          std::string::npos);
  REQUIRE(std::chrono::steady_clock::now() - start >= 100ms);
  close(other);
}

TEST_CASE("a lock released during the wait (the old head still exiting) is taken", "[state_lock]") {
  TempTree tree;
  int other = HoldLock(tree.root());
  std::thread old_head_exits([other] {
    std::this_thread::sleep_for(200ms);
    close(other);
  });
  auto lock = LockStateFolder(tree.root(), 30s);
  old_head_exits.join();
  REQUIRE(lock.ok());
  // Held now: a second head is refused.
  REQUIRE_FALSE(LockStateFolder(tree.root(), 0ms).ok());
  close(*lock);
  REQUIRE(LockStateFolder(tree.root(), 0ms).ok());
}
