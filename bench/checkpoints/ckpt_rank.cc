// ckpt_rank: the checkpoints benchmark's rank program, a training program
// reduced to what the benchmark times. It writes checkpoints as
// ctrain::save_checkpoint does (a folder checkpoint_NNNNNN holding model.pt
// and meta.json, written under a temporary name, synced, renamed into
// CLUSTER_CHECKPOINT_DIR, the oldest beyond CLUSTER_CHECKPOINT_KEEP pruned)
// and hands them to clusterd with ctrain::report, the same call and wire as
// a real job (train/report.cc, compiled in; no libtorch). model.pt is
// incompressible (a per-epoch pseudo-random stream), so no two checkpoints
// share a piece in the head's store.
//
//   ckpt_rank failover MIB   attempt 0: rank 0 saves checkpoint_000001 of MIB
//                            MiB and reports it, then every rank steps until
//                            it is killed; later attempts only wait.
//   ckpt_rank steps MIB      rank 0 steps (a fixed matmul on one thread) and
//                            records when each step ends; between steps it
//                            obeys files the benchmark drops in OUT_DIR:
//                            save-E saves and reports checkpoint E (and writes
//                            saved-E: "SAVE_START SAVE_END REPORTED" ns),
//                            stop writes steps and exits 0: a line per step
//                            end, "WALL CPU" (CLOCK_REALTIME and the thread's
//                            CPU clock, ns; the first line is the first step's
//                            start).
//   ckpt_rank victim MIB     bench/sharing's preempted job: every rank steps
//                            from the steps its newest checkpoint holds (a
//                            checkpoint's number is the steps done) to
//                            TOTAL_STEPS, then exits 0; rank 0 saves and
//                            reports a checkpoint every EPOCH_STEPS steps and
//                            writes OUT_DIR/progress-a<ATTEMPT> (the steps
//                            done) after each step. On a preemption notice
//                            (ctrain::preemption()) PREEMPT says what it
//                            does: "on-notice" saves and reports a
//                            checkpoint of the steps done and exits 0;
//                            "ignore" steps on until SIGTERM ends it;
//                            "stubborn" also ignores SIGTERM, so SIGKILL
//                            ends it after the job's preemption_grace_s.
//   ckpt_rank start 0        writes its start file and exits 0.
//
// Every rank first writes OUT_DIR/start-a<ATTEMPT>-r<RANK>: "START FOUND
// BYTES DIR\n", START its own start time (CLOCK_REALTIME, read before main, as
// bench/jobs' noop_rank does; all simulated machines share the clock),
// FOUND the newest complete checkpoint in CLUSTER_CHECKPOINT_DIR ("-" if
// none), BYTES the bytes of its files and DIR CLUSTER_CHECKPOINT_DIR itself. Files are written under a
// temporary name and renamed, so the benchmark never reads half of one.
// Linked statically (CMakeLists.txt). Exit: 0, or 1 with a line on stderr.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ctrain/preemption.h"
#include "ctrain/report.h"
#include "rank_checkpoints.h"

namespace {

using namespace clusterd::bench;

timespec g_start;

__attribute__((constructor(101))) void RecordStart() { clock_gettime(CLOCK_REALTIME, &g_start); }

int64_t ClockNs(clockid_t clock) {
  timespec t;
  clock_gettime(clock, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

int64_t NowNs() { return ClockNs(CLOCK_REALTIME); }

void WriteAll(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) Die("write " + path);
    data += w;
    n -= static_cast<size_t>(w);
  }
}

void SyncPath(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0) Die("fsync " + path);
  close(fd);
}

// `text` into `path` by way of path.tmp and a rename.
void WriteSmallFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("open " + tmp);
  WriteAll(fd, text.data(), text.size(), tmp);
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) Die("rename " + tmp);
}

uint64_t FolderBytes(const std::string& dir) {
  uint64_t bytes = 0;
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    struct stat st;
    if (stat((dir + "/" + e->d_name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) bytes += st.st_size;
  }
  closedir(d);
  return bytes;
}

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Saves checkpoint `epoch` as ctrain does and returns its path.
std::string SaveCheckpoint(const std::string& dir, int64_t epoch, uint64_t bytes) {
  MakeDirs(dir);
  std::string final_path = dir + "/" + CheckpointName(epoch);
  std::string tmp = dir + "/.tmp-" + CheckpointName(epoch) + "-" + std::to_string(getpid());
  RemoveFolder(tmp);
  if (mkdir(tmp.c_str(), 0755) != 0) Die("mkdir " + tmp);
  std::string model = tmp + "/model.pt";
  int fd = open(model.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("open " + model);
  std::vector<uint64_t> buffer((4u << 20) / 8);
  uint64_t state = 0x5eed0000ULL + static_cast<uint64_t>(epoch) * 1000003ULL + bytes;
  for (uint64_t done = 0; done < bytes;) {
    for (uint64_t& word : buffer) word = SplitMix(&state);
    size_t n = static_cast<size_t>(std::min<uint64_t>(bytes - done, buffer.size() * 8));
    WriteAll(fd, reinterpret_cast<const char*>(buffer.data()), n, model);
    done += n;
  }
  if (fsync(fd) != 0) Die("fsync " + model);
  close(fd);
  std::string meta = tmp + "/meta.json";
  WriteSmallFile(meta, "{\"epoch\":" + std::to_string(epoch) + ",\"unix_ms\":" + std::to_string(NowNs() / 1000000) +
                           ",\"extra\":{}}\n");
  SyncPath(meta);
  SyncPath(tmp);
  if (rename(tmp.c_str(), final_path.c_str()) != 0) Die("rename " + tmp);
  SyncPath(dir);
  KeepNewest(dir);
  return final_path;
}

// One training step of fixed cost: STEP_N x STEP_N matmuls (float, one thread).
struct Stepper {
  int n;
  std::vector<float> a, b, c;
  explicit Stepper(int size) : n(size), a(size * size), b(size * size), c(size * size) {
    for (int i = 0; i < n * n; ++i) {
      a[i] = static_cast<float>(i % 17) * 0.01f;
      b[i] = static_cast<float>(i % 13) * 0.02f;
    }
  }
  float Step() {
    std::fill(c.begin(), c.end(), 0.0f);
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < n; ++k) {
        float aik = a[i * n + k];
        const float* brow = &b[k * n];
        float* crow = &c[i * n];
        for (int j = 0; j < n; ++j) crow[j] += aik * brow[j];
      }
    }
    return c[n * n / 2];
  }
};

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

[[noreturn]] void WaitForever() {
  while (true) pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: ckpt_rank failover|steps|victim|start MIB\n");
    return 2;
  }
  const std::string mode = argv[1];
  const uint64_t bytes = std::strtoull(argv[2], nullptr, 10) << 20;
  const std::string out = Env("OUT_DIR"), dir = Env("CLUSTER_CHECKPOINT_DIR");
  const int rank = std::atoi(Env("RANK", "0").c_str()), attempt = std::atoi(Env("CLUSTER_ATTEMPT", "0").c_str());
  if (out.empty() || dir.empty()) {
    std::fprintf(stderr, "ckpt_rank: needs OUT_DIR and CLUSTER_CHECKPOINT_DIR\n");
    return 1;
  }
  MakeDirs(out);
  std::vector<std::string> found = CompleteCheckpoints(dir);
  std::string newest = found.empty() ? "-" : found.back();
  uint64_t found_bytes = found.empty() ? 0 : FolderBytes(dir + "/" + newest);
  int64_t start = static_cast<int64_t>(g_start.tv_sec) * 1000000000 + g_start.tv_nsec;
  WriteSmallFile(out + "/start-a" + std::to_string(attempt) + "-r" + std::to_string(rank),
                 std::to_string(start) + " " + newest + " " + std::to_string(found_bytes) + " " + dir + "\n");
  // A rank's log must not be empty (clusterd quotes its tail), and says what it found.
  std::printf("ckpt_rank %s: rank %d attempt %d found %s (%llu bytes)\n", mode.c_str(), rank, attempt,
              newest.c_str(), static_cast<unsigned long long>(found_bytes));
  std::fflush(stdout);
  Stepper stepper(std::atoi(Env("STEP_N", "288").c_str()));

  if (mode == "start") return 0;
  if (mode == "victim") {
    const int64_t epoch_steps = std::atoll(Env("EPOCH_STEPS", "20").c_str());
    const int64_t total_steps = std::atoll(Env("TOTAL_STEPS", "100").c_str());
    const std::string preempt = Env("PREEMPT", "on-notice");
    if (preempt == "stubborn") signal(SIGTERM, SIG_IGN);
    int64_t steps = found.empty() ? 0 : EpochOf(newest);
    const std::string progress = out + "/progress-a" + std::to_string(attempt);
    volatile float sink = 0;
    while (steps < total_steps) {
      if (preempt == "on-notice" && ctrain::preemption()) {
        // The checkpoint of these steps may be there already (the notice
        // came right after an epoch's end, or before the first step of a
        // resumed attempt): SaveCheckpoint's rename cannot replace it, and
        // it holds the same steps.
        const std::string saved = dir + "/" + CheckpointName(steps);
        if (rank == 0) {
          ctrain::report({{"steps", static_cast<double>(steps)}},
                         Exists(saved) ? saved : SaveCheckpoint(dir, steps, bytes));
        }
        return 0;
      }
      sink = sink + stepper.Step();
      ++steps;
      if (rank != 0) continue;
      WriteSmallFile(progress, std::to_string(steps) + "\n");
      if (steps % epoch_steps == 0) ctrain::report({{"steps", static_cast<double>(steps)}}, SaveCheckpoint(dir, steps, bytes));
    }
    return 0;
  }
  if (mode == "failover") {
    if (attempt > 0) WaitForever();
    if (rank == 0) {
      std::string path = SaveCheckpoint(dir, 1, bytes);
      ctrain::report({{"epoch", 1}}, path);
    }
    volatile float sink = 0;
    while (true) sink = sink + stepper.Step();
  }
  if (mode != "steps") {
    std::fprintf(stderr, "ckpt_rank: unknown mode %s\n", mode.c_str());
    return 2;
  }
  if (rank != 0) WaitForever();
  std::vector<std::pair<int64_t, int64_t>> ends;  // (wall, thread CPU)
  ends.reserve(1 << 20);
  auto mark = [&] { ends.emplace_back(NowNs(), ClockNs(CLOCK_THREAD_CPUTIME_ID)); };
  mark();
  volatile float sink = 0;
  for (int64_t epoch = 1;;) {
    sink = sink + stepper.Step();
    mark();
    if (Exists(out + "/save-" + std::to_string(epoch))) {
      int64_t save_start = NowNs();
      std::string path = SaveCheckpoint(dir, epoch, bytes);
      int64_t save_end = NowNs();
      ctrain::report({{"epoch", static_cast<double>(epoch)}}, path);
      int64_t reported = NowNs();
      WriteSmallFile(out + "/saved-" + std::to_string(epoch), std::to_string(save_start) + " " +
                                                                  std::to_string(save_end) + " " +
                                                                  std::to_string(reported) + "\n");
      ++epoch;
      mark();  // the save is not a step: the next one starts here
    }
    if (Exists(out + "/stop")) break;
  }
  std::string text;
  for (auto [wall, cpu] : ends) text += std::to_string(wall) + " " + std::to_string(cpu) + "\n";
  WriteSmallFile(out + "/steps", text);
  return 0;
}
