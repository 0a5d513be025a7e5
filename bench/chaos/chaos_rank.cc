// chaos_rank: the chaos run's checkpointing job, a training program reduced
// to its checkpoints. `chaos_rank EPOCHS EPOCH_MS`: every rank resumes after
// the newest complete checkpoint in CLUSTER_CHECKPOINT_DIR (a folder
// checkpoint_NNNNNN holding meta.json, as ctrain::save_checkpoint writes
// them), then runs the remaining epochs of EPOCH_MS each; after each epoch
// rank 0 writes checkpoint_<epoch> (under a temporary name, then renamed)
// and hands it to clusterd with ctrain::report (train/report.cc compiled in,
// no libtorch), which stores it in the head's store for the next attempt.
// It prints "chaos_rank: attempt A rank R resumes at epoch E" first, so the
// run can tell from the log whether a retry resumed. Exit 0 when every epoch
// is done, 1 with a line on stderr when a file cannot be written. Linked
// statically, like bench/checkpoints' ckpt_rank.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ctrain/report.h"
#include "rank_checkpoints.h"

namespace {

using namespace clusterd::bench;

void WriteFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("open " + path);
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()) || fsync(fd) != 0) {
    Die("write " + path);
  }
  close(fd);
}

// Writes checkpoint `epoch` (4 KiB of "weights" and meta.json), keeps the
// newest CLUSTER_CHECKPOINT_KEEP, and returns its path.
std::string Save(const std::string& dir, long epoch) {
  MakeDirs(dir);
  std::string tmp = dir + "/.tmp-" + CheckpointName(epoch) + "-" + std::to_string(getpid());
  RemoveFolder(tmp);
  if (mkdir(tmp.c_str(), 0755) != 0) Die("mkdir " + tmp);
  WriteFile(tmp + "/model.pt", std::string(4096, static_cast<char>('a' + epoch % 26)));
  WriteFile(tmp + "/meta.json", "{\"epoch\":" + std::to_string(epoch) + ",\"extra\":{}}\n");
  std::string path = dir + "/" + CheckpointName(epoch);
  RemoveFolder(path);
  if (rename(tmp.c_str(), path.c_str()) != 0) Die("rename " + tmp);
  KeepNewest(dir);
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: chaos_rank EPOCHS EPOCH_MS\n");
    return 2;
  }
  const long epochs = std::strtol(argv[1], nullptr, 10), epoch_ms = std::strtol(argv[2], nullptr, 10);
  const std::string dir = Env("CLUSTER_CHECKPOINT_DIR");
  const int rank = std::atoi(Env("RANK", "0").c_str());
  if (dir.empty()) {
    std::fprintf(stderr, "chaos_rank: needs CLUSTER_CHECKPOINT_DIR\n");
    return 1;
  }
  std::vector<std::string> found = CompleteCheckpoints(dir);
  long first = found.empty() ? 1 : static_cast<long>(EpochOf(found.back())) + 1;
  std::printf("chaos_rank: attempt %s rank %d resumes at epoch %ld\n", Env("CLUSTER_ATTEMPT", "0").c_str(), rank,
              first);
  std::fflush(stdout);
  for (long epoch = first; epoch <= epochs; ++epoch) {
    usleep(static_cast<useconds_t>(epoch_ms) * 1000);
    if (rank == 0) ctrain::report({{"epoch", static_cast<double>(epoch)}}, Save(dir, epoch));
  }
  return 0;
}
