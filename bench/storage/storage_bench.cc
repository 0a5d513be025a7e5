// bench/storage: upload and download throughput of a checkpoint-sized file
// through clusterd's S3 backend, against boto3 and s3cmd moving the same
// file to the same radosgw, and through the head's own store (gRPC), in one
// run. Also the time of an unchanged re-upload (hash cache warm: one
// existence check per piece, no byte sent).
//   storage_bench [--sizes-mib 10,1024] [--trials 3]
// Ceph comes from tests/integration/ceph_fixture.h (memstore: objects live
// in RAM, so each is deleted once measured). Prints a Markdown table.
#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/create_channel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/common/bench_failure.h"
#include "ceph_fixture.h"
#include "common/storage/blob_client.h"
#include "common/storage/hash_cache.h"
#include "common/storage/s3_blob_storage.h"
#include "common/sha256.h"
#include "common/storage/tree_transfer.h"
#include "harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace clusterd::bench;

namespace {

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void WriteRandomFile(const std::string& path, int64_t mib) {
  std::mt19937_64 random(42);
  std::string block(1 << 20, '\0');
  std::ofstream out(path, std::ios::binary);
  for (int64_t i = 0; i < mib; ++i) {
    for (size_t j = 0; j + 8 <= block.size(); j += 8) {
      uint64_t v = random();
      std::memcpy(&block[j], &v, 8);
    }
    out.write(block.data(), static_cast<std::streamsize>(block.size()));
  }
}

// Thrown, not exit(): unwinding stops Ceph and the head (an exit left
// radosgw and a memstore OSD holding gigabytes behind).
// Runs a shell command, returning its stdout; fails the bench on failure,
// or when it runs past 10 minutes (an s3cmd put once hung for 20).
std::string Shell(const std::string& command) {
  std::string out;
  std::string quoted;  // for sh -c '...': each ' becomes '\''
  for (char c : command) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  FILE* pipe = popen(("timeout 600 sh -c '" + quoted + "'").c_str(), "r");
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  if (pclose(pipe) != 0) throw BenchFailure("failed: " + command + "\n" + out);
  return out;
}

struct Row {
  std::string what;
  int64_t mib;
  double up_s, down_s;
};

int Run(int argc, char** argv) {
  std::vector<int64_t> sizes = {10, 1024};
  int trials = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--sizes-mib") {
      sizes.clear();
      std::stringstream list(argv[i + 1]);
      std::string item;
      while (std::getline(list, item, ',')) sizes.push_back(std::stoll(item));
    } else if (flag == "--trials") {
      trials = std::stoi(argv[i + 1]);
    }
  }
  std::string why;
  auto ceph = CephFixture::Start(&why);
  if (!ceph) {
    std::cerr << "storage_bench: no Ceph: " << why << "\n";
    return 77;
  }
  if (!ceph->CreateBucket("bench")) return 1;
  const std::string dir = ceph->dir();
  S3ClientOptions options;
  options.endpoint = {ceph->endpoint(), "us-east-1"};
  options.credentials = {ceph->access_key(), ceph->secret_key(), ""};
  S3BlobStorage s3(options, {"bench", "clusterd"});

  // boto3 and s3cmd, configured from files (no key in argv).
  std::ofstream(dir + "/s3cfg") << "[default]\naccess_key = " << ceph->access_key()
                                << "\nsecret_key = " << ceph->secret_key() << "\nhost_base = 127.0.0.1:"
                                << ceph->gateway_port() << "\nhost_bucket = 127.0.0.1:" << ceph->gateway_port()
                                << "\nuse_https = False\nsignature_v2 = False\n";
  std::ofstream(dir + "/boto.py")
      << "import sys, time, boto3\n"
         "s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1')\n"
         "op, path, key = sys.argv[2], sys.argv[3], sys.argv[4]\n"
         "t = time.monotonic()\n"
         "if op == 'put': s3.upload_file(path, 'bench', key)\n"
         "else: s3.download_file('bench', key, path)\n"
         "print(time.monotonic() - t)\n";
  std::string boto_env = fmt::format("AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY=$(cat {}/secret) ",
                                     ceph->access_key(), dir);
  std::ofstream(dir + "/secret") << ceph->secret_key();

  // The head's own store: a real clusterd head on loopback.
  Cluster cluster;
  if (cluster.StartHead({"--num-cpus", "0", "--store-capacity-mb", "8192"}).exit_code != 0) return 1;
  std::ifstream token_file(cluster.temp_dir() + "/session_latest/token");
  std::string token;
  token_file >> token;
  BlobClient head(grpc::CreateChannel(cluster.address(), grpc::InsecureChannelCredentials()), token,
                  cluster.address());

  std::vector<Row> rows;
  std::vector<std::string> notes;
  for (int64_t mib : sizes) {
    std::string root = fmt::format("{}/ckpt-{}", dir, mib);
    mkdir(root.c_str(), 0700);
    std::string file = root + "/model.bin";
    WriteRandomFile(file, mib);
    std::vector<double> up[4], down[4];
    double reupload_ms = 0;
    for (int trial = 0; trial < trials; ++trial) {
      // 0: clusterd S3, a checkpoint folder (pieces of the store's size, as the agent sends it).
      {
        auto t = std::chrono::steady_clock::now();
        auto tree = UploadTree(s3, root, {""});
        ThrowIfFailed(tree.status(), "S3 upload");
        up[0].push_back(Seconds(t));
        std::string dest = fmt::format("{}/restored-{}", dir, trial);
        t = std::chrono::steady_clock::now();
        ThrowIfFailed(DownloadTree(s3, tree->manifest_id, dest), "S3 download");
        down[0].push_back(Seconds(t));
        Shell("rm -rf " + dest);
        // Unchanged re-upload, the hash cache warm as the agent keeps it.
        HashCache cache = HashCache::Load(dir + "/hashes", root);
        TreeUploadOptions warm;
        warm.cache = &cache;
        ThrowIfFailed(UploadTree(s3, root, {""}, warm).status(), "warming the cache");
        cache.Save();
        t = std::chrono::steady_clock::now();
        auto again = UploadTree(s3, root, {""}, warm);
        ThrowIfFailed(again.status(), "S3 re-upload");
        reupload_ms = std::max(reupload_ms, Seconds(t) * 1000);
        if (again->sent_bytes != 0) notes.push_back("re-upload sent bytes");
        auto keys = s3.client().List("bench", "clusterd/");
        for (const std::string& key : *keys) s3.client().Delete("bench", key);
      }
      // 1: boto3's managed transfer (upload_file / download_file, its defaults).
      {
        up[1].push_back(std::stod(Shell(fmt::format("{}/usr/bin/python3 {}/boto.py {} put {} boto-{}", boto_env, dir,
                                                    ceph->endpoint(), file, mib))));
        down[1].push_back(std::stod(Shell(fmt::format("{}/usr/bin/python3 {}/boto.py {} get {}/boto.out boto-{}",
                                                      boto_env, dir, ceph->endpoint(), dir, mib))));
        Shell(fmt::format("rm -f {}/boto.out", dir));
        s3.client().Delete("bench", fmt::format("boto-{}", mib));
      }
      // 2: s3cmd (process start included: about 0.2 s).
      {
        auto t = std::chrono::steady_clock::now();
        Shell(fmt::format("s3cmd -q -c {}/s3cfg put {} s3://bench/s3cmd-{}", dir, file, mib));
        up[2].push_back(Seconds(t));
        t = std::chrono::steady_clock::now();
        Shell(fmt::format("s3cmd -q -c {}/s3cfg --force get s3://bench/s3cmd-{} {}/s3cmd.out", dir, mib, dir));
        down[2].push_back(Seconds(t));
        Shell(fmt::format("rm -f {}/s3cmd.out", dir));
        s3.client().Delete("bench", fmt::format("s3cmd-{}", mib));
      }
      // 3: the head's own store over gRPC, the same folder.
      {
        auto t = std::chrono::steady_clock::now();
        auto tree = UploadTree(head, root, {""});
        ThrowIfFailed(tree.status(), "head upload");
        up[3].push_back(Seconds(t));
        std::string dest = fmt::format("{}/restored-head-{}", dir, trial);
        t = std::chrono::steady_clock::now();
        ThrowIfFailed(DownloadTree(head, tree->manifest_id, dest), "head download");
        down[3].push_back(Seconds(t));
        Shell("rm -rf " + dest);
        // The next trial must send it again: a new head state is too slow
        // to make, so the bench measures the first trial's upload only.
      }
    }
    const std::string names[] = {fmt::format("clusterd, S3 backend ({} MiB pieces)", s3.PieceBytes() >> 20),
                                 "boto3 upload_file/download_file", "s3cmd put/get",
                                 fmt::format("clusterd, head's store (gRPC, {} MiB pieces)", head.PieceBytes() >> 20)};
    for (int i = 0; i < 4; ++i) rows.push_back({names[i], mib, i == 3 ? up[i][0] : Median(up[i]), Median(down[i])});
    notes.push_back(fmt::format("{} MiB: unchanged re-upload through S3, worst of {}: {:.1f} ms", mib, trials,
                                reupload_ms));
    Shell("rm -rf " + root);
  }
  std::cout << "| path | size | upload MB/s | download MB/s |\n| --- | --- | --- | --- |\n";
  for (const Row& row : rows) {
    double mb = static_cast<double>(row.mib) * 1.048576;
    std::cout << fmt::format("| {} | {} MiB | {:.0f} | {:.0f} |\n", row.what, row.mib, mb / row.up_s,
                             mb / row.down_s);
  }
  for (const std::string& note : notes) std::cout << "\n" << note << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return clusterd::bench::RunReportingFailure("storage_bench", [](int c, char** v) { return Run(c, v); }, argc, argv);
}
