// socket_floor: the report benchmark's floor, a Unix-socket server that speaks the agent's framed protocol
// (a 4-byte big-endian length and a payload in, {"ok":true} out, one request per connection) and does
// nothing else: no thread per connection, no parsing, no event loop. What a report's round trip costs on
// this machine before the agent does any work. Compiled by run.py; stopped by SIGTERM.
//   socket_floor PATH
#include <arpa/inet.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

static bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: socket_floor PATH\n");
    return 2;
  }
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
  std::string payload;
  for (;;) {
    int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    uint32_t n = 0;
    if (ReadAll(fd, reinterpret_cast<char*>(&n), 4)) {
      payload.resize(ntohl(n));
      if (ReadAll(fd, payload.data(), payload.size())) (void)!write(fd, frame.data(), frame.size());
    }
    close(fd);
  }
}
