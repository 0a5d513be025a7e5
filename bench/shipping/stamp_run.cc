// stamp_run: the shipping benchmark's stopwatch on a simulated machine.
//   stamp_run OUT CMD [ARGS...]  reads CLOCK_REALTIME, starts CMD (posix_spawnp,
//                                its stdio inherited), waits for it, reads the
//                                clock again, writes "START END\n" (ns) to OUT
//                                and exits with CMD's status.
//   stamp_run OUT                writes "NOW NOW\n": a point in time.
// All simulated machines share the kernel's CLOCK_REALTIME, so a START taken
// on the client and a rank's own start time on a worker subtract exactly.
// Static (see CMakeLists.txt), so that nothing but a vfork-style spawn sits
// between the first clock read and the exec of CMD.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

extern char** environ;

namespace {

long long NowNs() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

// Written to OUT.tmp and renamed, so that a reader never sees half a line.
bool WriteTimes(const char* out, long long start, long long end) {
  char tmp[4096], line[64];
  std::snprintf(tmp, sizeof tmp, "%s.tmp", out);
  int length = std::snprintf(line, sizeof line, "%lld %lld\n", start, end);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, line, static_cast<size_t>(length)) == length;
  ok = close(fd) == 0 && ok;
  return ok && rename(tmp, out) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: stamp_run OUT [CMD ARGS...]\n");
    return 2;
  }
  if (argc == 2) {
    long long now = NowNs();
    return WriteTimes(argv[1], now, now) ? 0 : 1;
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_USEVFORK);
  pid_t pid = 0;
  long long start = NowNs();
  int rc = posix_spawnp(&pid, argv[2], nullptr, &attr, argv + 2, environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::fprintf(stderr, "stamp_run: cannot start %s\n", argv[2]);
    return 127;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  long long end = NowNs();
  if (!WriteTimes(argv[1], start, end)) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
