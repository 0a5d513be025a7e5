// LauncherWakeup alone, on an io_context run by the test: the loop is woken
// when the launcher's descriptor turns readable, goes on being woken while
// it is the same socket, follows a new socket once the launcher replaces
// its own, and a closed one or a false from the callback stops the wake-ups.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>

#include "daemon/agent/launcher_wakeup.h"
#include "fake_launcher.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// A launcher whose "ready" socket the test writes to, and can replace.
class SocketLauncher : public FakeLauncher {
 public:
  SocketLauncher() { Replace(); }
  ~SocketLauncher() override { CloseBoth(); }
  int ReadyFd() const override { return ends_[0]; }
  void Replace() {
    CloseBoth();
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends_) == 0);
  }
  void CloseBoth() {
    if (ends_[0] >= 0) close(ends_[0]);
    if (ends_[1] >= 0) close(ends_[1]);
    ends_[0] = ends_[1] = -1;
  }
  void Gone() { CloseBoth(); }
  // Makes the launcher's side readable, as a child's exit does.
  void Signal() { REQUIRE(write(ends_[1], "x", 1) == 1); }
  // What the launcher does on Reap: drains what woke the loop.
  void Drain() {
    char buffer[16];
    while (recv(ends_[0], buffer, sizeof buffer, MSG_DONTWAIT) > 0) {
    }
  }

 private:
  int ends_[2] = {-1, -1};
};

void RunFor(boost::asio::io_context& context, int ms) {
  context.restart();
  context.run_for(std::chrono::milliseconds(ms));
}

// A loop, a launcher and a wake-up that counts its calls; each call drains
// the launcher and asks for more, or, with `keep_waking` false, drains
// nothing and asks for none.
struct CountedWakeups {
  explicit CountedWakeups(bool keep_waking = true) : keep_waking(keep_waking) {}

  // The launcher says something, and the loop runs long enough to hear it.
  void SignalAndRun() {
    launcher.Signal();
    RunFor(context, 200);
  }

  const bool keep_waking;
  boost::asio::io_context context;
  SocketLauncher launcher;
  int wakes = 0;
  LauncherWakeup wakeup{context, &launcher, [this] {
                          ++wakes;
                          if (keep_waking) launcher.Drain();
                          return keep_waking;
                        }};
};

}  // namespace

TEST_CASE_METHOD(CountedWakeups, "the loop is woken each time the launcher's socket turns readable",
                 "[launcher_wakeup]") {
  wakeup.Follow();
  REQUIRE(wakeup.watching());
  RunFor(context, 20);
  CHECK(wakes == 0);  // nothing said yet
  SignalAndRun();
  CHECK(wakes == 1);
  SignalAndRun();
  CHECK(wakes == 2);  // re-armed on the same socket
  wakeup.Follow();    // the same socket: not watched twice
  SignalAndRun();
  CHECK(wakes == 3);
}

TEST_CASE_METHOD(CountedWakeups, "a launcher's new socket is followed and its closed one stops waking the loop",
                 "[launcher_wakeup]") {
  wakeup.Follow();
  launcher.Replace();  // the launcher restarted
  wakeup.Follow();
  REQUIRE(wakeup.watching());
  SignalAndRun();
  CHECK(wakes == 1);

  launcher.Gone();  // no launcher now: the poll goes on
  wakeup.Follow();
  CHECK_FALSE(wakeup.watching());
  RunFor(context, 50);
  CHECK(wakes == 1);
}

namespace {
// The agent stops: whatever is still readable wakes nothing.
struct StoppingWakeup : CountedWakeups {
  StoppingWakeup() : CountedWakeups(/*keep_waking=*/false) {}
};
}  // namespace

TEST_CASE_METHOD(StoppingWakeup, "a wake-up told to stop is not armed again, and Close stops watching",
                 "[launcher_wakeup]") {
  wakeup.Follow();
  SignalAndRun();
  CHECK(wakes == 1);
  RunFor(context, 50);  // still readable, but not armed
  CHECK(wakes == 1);
  wakeup.Close();
  CHECK_FALSE(wakeup.watching());
}
