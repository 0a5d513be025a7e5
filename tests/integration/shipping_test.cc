// Code shipping on one machine (the multi-machine tests show it across
// machines): a shipped job runs in its node's copy with exec bits, symlinks
// and ignore rules kept; an unchanged folder uploads nothing; and each bad
// input of the issue is one line with nothing submitted.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "harness.h"
#include "common/file_util.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

void Write(const fs::path& path, const std::string& content, fs::perms mode = fs::perms(0644)) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << content;
  fs::permissions(path, mode);
}

// A job file for the folder `dir` (its own job file lives outside it).
std::string JobFile(const fs::path& dir, const std::string& extra = "") {
  std::string file = dir.string() + ".yaml";
  std::ofstream(file) << "name: shipped\nentrypoint: ./run.sh\nworking_dir: " << dir.string() << "\n" << extra;
  return file;
}

int JobCount(Cluster& cluster) { return ParseJson<ListJobsReply>(cluster.Ctl({"jobs", "--json"})).jobs_size(); }

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TEST_CASE("a shipped job runs in its node's copy with exec bits, symlinks and ignore rules kept, an unchanged folder uploads nothing",
          "[shipping]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  fs::path proj = fs::path(cluster.temp_dir()) / "proj";
  Write(proj / "run.sh",
        "#!/bin/sh\nset -e\necho \"cwd=$(pwd)\"\necho \"named=$CLUSTER_WORKING_DIR\"\n"
        "echo \"checkpoints=$CLUSTER_CHECKPOINT_DIR\"\necho \"gloo=$GLOO_SOCKET_IFNAME ip=$CLUSTER_NODE_IP\"\n"
        "cat data/link.txt\ntest ! -e .git\ntest ! -e debug.log\ncat keep.log\n",
        fs::perms(0755));
  Write(proj / "data" / "real.txt", "payload\n");
  fs::create_symlink("real.txt", proj / "data" / "link.txt");
  Write(proj / ".git" / "HEAD", "ref: refs/heads/main\n");
  Write(proj / ".clusterignore", "*.log\n!keep.log\n");
  Write(proj / "debug.log", "noise\n");
  Write(proj / "keep.log", "kept\n");
  std::string file = JobFile(proj);

  RunResult first = cluster.Ctl({"submit", file, "--follow"}, 60s);
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  REQUIRE(first.err.find("package ") != std::string::npos);
  REQUIRE(first.err.find("), uploaded") != std::string::npos);
  std::string cwd = first.out.substr(first.out.find("cwd=") + 4);
  cwd = FirstLine(cwd);
  REQUIRE(cwd.rfind(cluster.temp_dir() + "/work/", 0) == 0);  // the node's copy, not the folder itself
  REQUIRE(first.out.find("named=" + cwd) != std::string::npos);
  REQUIRE(first.out.find("checkpoints=" + cwd + "/checkpoints/job-0001-") != std::string::npos);
  REQUIRE(first.out.find("gloo=lo ip=127.0.0.1") != std::string::npos);
  REQUIRE(first.out.find("payload") != std::string::npos);
  REQUIRE(first.out.find("kept") != std::string::npos);

  RunResult again = cluster.Ctl({"submit", file, "--follow"}, 60s);
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  REQUIRE(again.err.find("), already on the head") != std::string::npos);
  // A change makes a new package.
  Write(proj / "data" / "real.txt", "payload two\n");
  RunResult changed = cluster.Ctl({"submit", file, "--follow"}, 60s);
  REQUIRE(changed.exit_code == 0);
  REQUIRE(changed.err.find("), uploaded") != std::string::npos);
  REQUIRE(changed.out.find("payload two") != std::string::npos);
}

TEST_CASE("bad working_dirs are one-line errors with nothing submitted", "[shipping][bad_input]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  fs::path root = cluster.temp_dir();

  SECTION("over the cap, naming the size and the largest files") {
    Write(root / "big" / "run.sh", "#!/bin/sh\n", fs::perms(0755));
    Write(root / "big" / "weights.bin", std::string(3000, 'w'));
    RunResult r = cluster.Ctl({"submit", JobFile(root / "big", "max_package_size: 1Ki\n")});
    INFO(r.err);
    REQUIRE(r.exit_code == 1);
    REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    REQUIRE(r.err.find("over the 1.0 KiB cap") != std::string::npos);
    REQUIRE(r.err.find("weights.bin 2.9 KiB") != std::string::npos);
  }
  SECTION("an absolute symlink out of the folder, unless excludes drops it") {
    Write(root / "link" / "run.sh", "#!/bin/sh\necho ran\n", fs::perms(0755));
    fs::create_symlink("/etc/passwd", root / "link" / "escape");
    RunResult r = cluster.Ctl({"submit", JobFile(root / "link")});
    INFO(r.err);
    REQUIRE(r.exit_code == 1);
    REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    REQUIRE(r.err.find("escape -> /etc/passwd") != std::string::npos);
    REQUIRE(r.err.find("is a symlink pointing out of the folder") != std::string::npos);
    REQUIRE(JobCount(cluster) == 0);
    RunResult dropped = cluster.Ctl({"submit", JobFile(root / "link", "excludes: [escape]\n"), "--follow"}, 60s);
    INFO(dropped.err);
    REQUIRE(dropped.exit_code == 0);
    REQUIRE(dropped.out.find("ran") != std::string::npos);
  }
  SECTION("a file the submitter cannot read") {
    // As an ordinary user: root reads everything.
    char made[] = "/tmp/clusterd-it-nobody-XXXXXX";
    fs::path dir = mkdtemp(made);
    fs::permissions(dir, fs::perms(0755));
    Write(dir / "proj" / "run.sh", "#!/bin/sh\n", fs::perms(0755));
    Write(dir / "proj" / "secret.key", "s3cret", fs::perms(0));
    fs::create_directories(dir / "cache");
    REQUIRE(chown((dir / "cache").c_str(), 65534, 65534) == 0);
    std::string file = JobFile(dir / "proj");
    auto token = ReadFileTrimmed(cluster.temp_dir() + "/session_latest/token");
    REQUIRE(token.ok());
    RunResult r = Run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", CLUSTERCTL_BIN, "submit",
                       file},
                      std::map<std::string, std::string>{{"CLUSTER_ADDRESS", cluster.address()},
                                                         {"CLUSTER_TOKEN", *token},
                                                         {"XDG_CACHE_HOME", (dir / "cache").string()}});
    fs::remove_all(dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 1);
    REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    REQUIRE(r.err.find("secret.key") != std::string::npos);
  }
  REQUIRE(JobCount(cluster) <= 1);  // only the good submit of the symlink case
}

TEST_CASE("a package that fails its hash on the node fails the attempt and the head drops its bad copy for the next submit",
          "[shipping][bad_input]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  fs::path proj = fs::path(cluster.temp_dir()) / "proj";
  Write(proj / "run.sh", "#!/bin/sh\necho fine\n", fs::perms(0755));
  std::string file = JobFile(proj);
  RunResult first = cluster.Ctl({"submit", file, "--json", "--follow"}, 60s);
  REQUIRE(first.exit_code == 0);
  JobInfo job = ParseJson<JobInfo>(cluster.Ctl({"job", SubmittedJobId(first), "--json"}));
  const std::string id = job.spec().package_id();
  REQUIRE(id.size() == 64);

  // The head's copy goes bad on its disk (same size, one byte flipped), and
  // the node has no copy of its own any more.
  fs::path blob = fs::path(cluster.temp_dir()) / "state" / "store" / "blobs" / id.substr(0, 2) / id;
  REQUIRE(fs::exists(blob));
  {
    std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
    char c;
    f.seekg(100);
    f.get(c);
    f.seekp(100);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  fs::remove_all(fs::path(cluster.temp_dir()) / "packages" / id);
  fs::remove(fs::path(cluster.temp_dir()) / "packages" / (id + ".index"));

  RunResult second = cluster.Ctl({"submit", file, "--json", "--follow"}, 60s);
  INFO(second.err);
  REQUIRE(second.exit_code == 1);
  REQUIRE(second.err.find("already on the head") != std::string::npos);
  JobInfo failed = ParseJson<JobInfo>(cluster.Ctl({"job", SubmittedJobId(second), "--json"}));
  INFO(failed.reason());
  REQUIRE(failed.state() == FAILED);
  REQUIRE(failed.reason().find("could not start: package " + id + " failed its hash check") != std::string::npos);
  // The node had the head check its copy, which it dropped: the next submit
  // uploads the package again and runs, where keeping the bad copy would
  // fail every later submit of the folder the same way.
  REQUIRE(failed.reason().find("the head's copy was corrupt and is dropped") != std::string::npos);
  REQUIRE_FALSE(fs::exists(blob));
  RunResult third = cluster.Ctl({"submit", file, "--json", "--follow"}, 60s);
  INFO(third.err);
  REQUIRE(third.exit_code == 0);
  REQUIRE(third.err.find("already on the head") == std::string::npos);
}
