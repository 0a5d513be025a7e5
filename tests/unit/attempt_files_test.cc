// AttemptFiles alone: which files an attempt leaves on the node (its
// working folder when it ships code, the hash caches of the folders it
// uploads from), that they stay while anything of the attempt is held and
// go once nothing is, and that only dead agents' working folders are
// swept at start.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "common/storage/hash_cache.h"
#include "daemon/agent/attempt_files.h"
#include "daemon/agent/launch_prep.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

LaunchRanks LaunchOf(const std::string& job_id, int attempt, const std::string& package_id, bool store_checkpoints,
                     const std::string& checkpoint_dir, const std::string& working_dir = "") {
  LaunchRanks launch;
  launch.set_job_id(job_id);
  launch.set_attempt(attempt);
  launch.set_package_id(package_id);
  launch.set_store_checkpoints(store_checkpoints);
  launch.set_working_dir(working_dir);
  if (!checkpoint_dir.empty()) (*launch.mutable_env())["CLUSTER_CHECKPOINT_DIR"] = checkpoint_dir;
  launch.add_ranks();
  return launch;
}

// Leaves a hash cache of `root` in `dir`, as an upload from it would.
void CacheHashesOf(const std::string& dir, const std::string& root) {
  HashCache cache = HashCache::Load(dir, root);
  cache.Put("a.py", FileStamp{1, 1'000'000'000, 1'000'000'000, 1}, std::string(64, 'a'));
  REQUIRE(cache.Save().ok());
}

size_t FilesIn(const std::string& dir) {
  std::error_code ec;
  size_t count = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec); it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    ++count;
  }
  return count;
}

struct Fixture {
  TempTree tree;
  std::string work_dir = tree.Path("work/1");
  std::string hash_dir = tree.Path("hashes");
  std::vector<std::string> removed;
  AttemptFiles files{work_dir, hash_dir, [this](const std::string& folder) { removed.push_back(folder); }};
};

}  // namespace

TEST_CASE("an attempt that ships its code leaves its folder and its uploads' caches until nothing holds it",
          "[attempt_files]") {
  Fixture f;
  LaunchRanks launch = LaunchOf("job-1", 2, "pkg", true, "ckpt");
  f.files.Track(launch);
  REQUIRE(f.files.tracked() == 1);
  const std::string folder = WorkingFolder(f.work_dir, "job-1", 2);
  CacheHashesOf(f.hash_dir, folder);
  CacheHashesOf(f.hash_dir, folder + "/ckpt");
  CacheHashesOf(f.hash_dir, folder + "/ckpt/.uploading");
  CacheHashesOf(f.hash_dir, "/elsewhere");  // another attempt's, not this one's
  REQUIRE(FilesIn(f.hash_dir) == 4);

  std::vector<std::pair<std::string, int>> asked;
  f.files.RemoveDone([&](const std::string& job_id, int attempt) {
    asked.emplace_back(job_id, attempt);
    return true;
  });
  CHECK(asked == std::vector<std::pair<std::string, int>>{{"job-1", 2}});
  CHECK(f.removed.empty());
  CHECK(FilesIn(f.hash_dir) == 4);
  CHECK(f.files.tracked() == 1);

  f.files.RemoveDone([](const std::string&, int) { return false; });
  CHECK(f.removed == std::vector<std::string>{folder});
  CHECK(FilesIn(f.hash_dir) == 1);
  CHECK(f.files.empty());
  // Forgotten: nothing is removed twice.
  f.files.RemoveDone([](const std::string&, int) { return false; });
  CHECK(f.removed.size() == 1);
}

TEST_CASE("a shared-mode attempt leaves nothing of ours but its checkpoints' caches", "[attempt_files]") {
  Fixture f;
  f.files.Track(LaunchOf("job-1", 0, "", false, "ckpt", "/home/u/proj"));
  CHECK(f.files.empty());  // neither a folder of ours nor stored checkpoints

  f.files.Track(LaunchOf("job-2", 0, "", true, "ckpt", "/home/u/proj"));
  REQUIRE(f.files.tracked() == 1);
  CacheHashesOf(f.hash_dir, "/home/u/proj/ckpt");
  CacheHashesOf(f.hash_dir, "/home/u/proj/ckpt/.uploading");
  CacheHashesOf(f.hash_dir, "/home/u/proj");  // the user's folder: not ours to forget
  f.files.RemoveDone([](const std::string&, int) { return false; });
  CHECK(f.removed.empty());  // the user's folder stays
  CHECK(FilesIn(f.hash_dir) == 1);
}

TEST_CASE("each attempt's files go on their own, and a second launch of one adds nothing", "[attempt_files]") {
  Fixture f;
  f.files.Track(LaunchOf("job-1", 0, "pkg", false, ""));
  f.files.Track(LaunchOf("job-1", 0, "pkg", false, ""));
  f.files.Track(LaunchOf("job-1", 1, "pkg", false, ""));
  REQUIRE(f.files.tracked() == 2);
  f.files.RemoveDone([](const std::string&, int attempt) { return attempt == 1; });
  CHECK(f.removed == std::vector<std::string>{WorkingFolder(f.work_dir, "job-1", 0)});
  CHECK(f.files.tracked() == 1);
  f.files.RemoveDone([](const std::string&, int) { return false; });
  CHECK(f.removed == std::vector<std::string>{WorkingFolder(f.work_dir, "job-1", 0),
                                               WorkingFolder(f.work_dir, "job-1", 1)});
}

TEST_CASE("at start only the working folders of agents that no longer run are removed", "[attempt_files]") {
  TempTree tree;
  pid_t child = fork();
  if (child == 0) _exit(0);
  REQUIRE(child > 0);
  REQUIRE(waitpid(child, nullptr, 0) == child);  // reaped: its pid names no process now
  const std::string dead = std::to_string(child);
  const std::string mine = std::to_string(getpid());
  const std::string alive = std::to_string(getppid());
  for (const std::string& name : {dead, mine, alive, std::string("not-a-pid")}) tree.Write("work/" + name + "/f", "x");

  AttemptFiles::RemoveStaleWorkDirs(tree.Path("work/" + mine));
  CHECK_FALSE(std::filesystem::exists(tree.Path("work/" + dead)));
  CHECK(std::filesystem::exists(tree.Path("work/" + mine + "/f")));
  CHECK(std::filesystem::exists(tree.Path("work/" + alive + "/f")));
  CHECK(std::filesystem::exists(tree.Path("work/not-a-pid/f")));
}

TEST_CASE("a file the attempt left (its preemption notice) goes with the attempt", "[attempt_files][preemption]") {
  Fixture f;
  f.tree.Write("logs/job-1.attempt-0.preemption", "1700000000000 job-2\n");
  const std::string notice = f.tree.Path("logs/job-1.attempt-0.preemption");
  f.files.TrackFile("job-1", 0, notice);
  f.files.TrackFile("job-1", 0, notice);  // told twice (sent again after a reconnect)
  REQUIRE(f.files.tracked() == 1);
  f.files.RemoveDone([](const std::string&, int) { return true; });
  CHECK(std::filesystem::exists(notice));  // its ranks may still look
  f.files.RemoveDone([](const std::string&, int) { return false; });
  CHECK_FALSE(std::filesystem::exists(notice));
  CHECK(f.files.empty());
}
