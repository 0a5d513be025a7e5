#include "connection_flood.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

namespace clusterd::testing {
namespace {

constexpr char kHttp2Preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

}  // namespace

int ConnectionFlood::Open(const std::string& host, int port, int sources, int per_source, bool preface,
                          int first_source) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &to.sin_addr);
  int opened = 0;
  for (int s = 0; s < sources; ++s) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, ("127.0.0." + std::to_string(first_source + s)).c_str(), &from.sin_addr);
    for (int i = 0; i < per_source; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) return opened;
      if ((first_source >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) ||
          (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)) {
        close(fd);
        continue;
      }
      pollfd writable{fd, POLLOUT, 0};
      int error = 0;
      socklen_t length = sizeof error;
      if (poll(&writable, 1, 1000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
        close(fd);
        continue;
      }
      if (preface) (void)!send(fd, kHttp2Preface, sizeof kHttp2Preface - 1, MSG_NOSIGNAL);
      fds_.push_back(fd);
      ++opened;
    }
  }
  return opened;
}

int ConnectionFlood::ClosedByPeer() {
  int closed = 0;
  for (int fd : fds_) {
    char buffer[256];
    ssize_t got;
    while ((got = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT)) > 0) {
    }
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) ++closed;
  }
  return closed;
}

void ConnectionFlood::CloseAll() {
  for (int fd : fds_) close(fd);
  fds_.clear();
}

int OpenDescriptors(int pid) {
  DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!dir) return -1;
  int count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

long ResidentKiB(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace clusterd::testing
