#include "ha_backing.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "proc_usage.h"

namespace clusterd::bench {

namespace {

namespace fs = std::filesystem;

constexpr const char* kBucket = "bench-ha";

// One counter of /proc/PID/io ("write_bytes: N"); nullopt when unreadable.
std::optional<uint64_t> IoCounter(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == name + ":") return value;
  }
  return std::nullopt;
}

}  // namespace

std::unique_ptr<HaBacking> HaBacking::Start(std::string* why_not) {
  if (!testing::EtcdMembers::Installed(why_not)) return nullptr;
  std::unique_ptr<HaBacking> backing(new HaBacking());
  backing->ceph_ = testing::CephFixture::Start(why_not);
  if (!backing->ceph_) return nullptr;
  if (!backing->ceph_->CreateBucket(kBucket)) {
    *why_not = std::string("radosgw did not create the bucket ") + kBucket;
    return nullptr;
  }
  testing::UseCeph(*backing->ceph_);
  backing->etcd_ = std::make_unique<testing::EtcdMembers>(3);
  if (!backing->etcd_->error().empty()) {
    *why_not = "etcd: " + backing->etcd_->error();
    return nullptr;
  }
  return backing;
}

std::vector<std::string> HaBacking::HeadFlags(const std::string& prefix) const {
  return {"--ha", etcd_->url("/" + prefix), "--store", std::string("s3://") + kBucket + "/" + prefix,
          "--s3-endpoint", ceph_->endpoint()};
}

std::vector<pid_t> HaBacking::etcd_pids() const { return ChildrenNamed(getpid(), "etcd"); }

uint64_t HaBacking::EtcdDbBytes() const {
  uint64_t bytes = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(etcd_->dir(), ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file(ec) && it->path().filename() == "db" &&
        it->path().parent_path().filename() == "snap") {
      bytes += it->file_size(ec);
    }
  }
  return bytes;
}

bool EtcdUsageWindow::Read(Sample* sample) const {
  for (pid_t pid : pids_) {
    auto cpu = bench::CpuSeconds(pid);  // the free function, not this class's
    auto disk = IoCounter(pid, "write_bytes");
    auto written = IoCounter(pid, "wchar");
    if (!cpu || !disk || !written) return false;
    sample->cpu_s += *cpu;
    sample->disk_bytes += *disk;
    sample->written_bytes += *written;
  }
  sample->db_bytes = backing_.EtcdDbBytes();
  return true;
}

bool EtcdUsageWindow::Start() {
  pids_ = backing_.etcd_pids();
  start_ = Sample{};
  t0_ = std::chrono::steady_clock::now();
  return !pids_.empty() && Read(&start_);
}

bool EtcdUsageWindow::Stop() {
  Sample end;
  if (!Read(&end)) return false;
  wall_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  cpu_s_ = end.cpu_s - start_.cpu_s;
  disk_bytes_ = end.disk_bytes - start_.disk_bytes;
  written_bytes_ = end.written_bytes - start_.written_bytes;
  db_growth_ = static_cast<int64_t>(end.db_bytes) - static_cast<int64_t>(start_.db_bytes);
  return true;
}

}  // namespace clusterd::bench
