// socket_floor: the report benchmark's floor, a Unix-socket server that speaks the agent's framed protocol
// (a 4-byte big-endian length and a payload in, {"ok":true} out, one request per connection) and does
// nothing else: no thread per connection, no parsing, no event loop. What a report's round trip costs on
// this machine before the agent does any work. With --handoffs it takes the agent's path between threads
// (daemon/agent/report_server.cc, NodeAgent::ForwardReport) and still does no work: the accepting thread
// starts a thread per connection, which reads the frame, hands a task to a loop thread and waits for it to
// run before it answers. Compiled by run.py; stopped by SIGTERM.
//   socket_floor PATH [--handoffs]
#include <arpa/inet.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>

// A loop thread that runs posted tasks in order, as the agent's event loop runs its Call()s.
class Loop {
 public:
  Loop() : thread_([this] { Run(); }) {}
  void Call(std::function<void()> fn) {
    std::promise<void> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back([&] {
        fn();
        done.set_value();
      });
    }
    cv_.notify_one();
    done.get_future().wait();
  }

 private:
  void Run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !tasks_.empty(); });
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::thread thread_;
};

static bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

static void Serve(int fd, const std::string& frame, Loop* loop) {
  uint32_t n = 0;
  std::string payload;
  if (ReadAll(fd, reinterpret_cast<char*>(&n), 4)) {
    payload.resize(ntohl(n));
    if (ReadAll(fd, payload.data(), payload.size())) {
      if (loop) loop->Call([] {});
      (void)!write(fd, frame.data(), frame.size());
    }
  }
  close(fd);
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::strcmp(argv[2], "--handoffs") != 0)) {
    std::fprintf(stderr, "usage: socket_floor PATH [--handoffs]\n");
    return 2;
  }
  const bool handoffs = argc == 3;
  signal(SIGPIPE, SIG_IGN);
  int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
  unlink(argv[1]);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 64) != 0) {
    std::perror("socket_floor: bind/listen");
    return 1;
  }
  const std::string reply = R"({"ok":true})";
  uint32_t len = htonl(static_cast<uint32_t>(reply.size()));
  std::string frame(reinterpret_cast<const char*>(&len), 4);
  frame += reply;
  static Loop* loop = handoffs ? new Loop : nullptr;
  for (;;) {
    int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    if (handoffs) {
      std::thread([fd, &frame] { Serve(fd, frame, loop); }).detach();
    } else {
      Serve(fd, frame, nullptr);
    }
  }
}
