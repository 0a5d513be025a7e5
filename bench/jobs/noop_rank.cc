// noop_rank: the rank program of the jobs benchmark. It records when it
// started (CLOCK_REALTIME, ns) as early as a C++ program can, before main()
// and before the C++ runtime's other constructors, writes it to
// $OUT_DIR/rank-$RANK and exits 0. Linked statically (see CMakeLists.txt)
// so that no dynamic loader sits between exec and the clock read. With no
// OUT_DIR it only prints its line and exits. It always prints one line,
// as most programs do, so that the benchmark pays for a rank's log on the
// node and on the head. (Silent ranks are fine: the array tests run
// /bin/true.)
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

timespec g_start;

__attribute__((constructor(101))) void RecordStart() { clock_gettime(CLOCK_REALTIME, &g_start); }

}  // namespace

int main() {
  static const char kLine[] = "noop_rank\n";
  if (write(1, kLine, sizeof kLine - 1) < 0) return 1;
  const char* dir = std::getenv("OUT_DIR");
  const char* rank = std::getenv("RANK");
  if (!dir || !rank) return 0;
  char path[4096], tmp[4096], line[64];
  std::snprintf(path, sizeof path, "%s/rank-%s", dir, rank);
  std::snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int length = std::snprintf(line, sizeof line, "%lld\n",
                             static_cast<long long>(g_start.tv_sec) * 1000000000LL + g_start.tv_nsec);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 1;
  bool ok = write(fd, line, static_cast<size_t>(length)) == length;
  ok = close(fd) == 0 && ok;
  // Renamed into place so that the benchmark never reads half a number.
  return ok && rename(tmp, path) == 0 ? 0 : 1;
}
