// What a head in HA (--ha) stands on, for the benchmarks that measure one:
// three real etcd members (tests/integration/etcd_members.h) and a radosgw
// with a bucket (tests/integration/ceph_fixture.h), both on loopback in
// temp folders, and what etcd itself costs over a window: its members'
// CPU (/proc/PID/stat), the bytes they wrote (/proc/PID/io) and the
// growth of their databases.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ceph_fixture.h"
#include "etcd_members.h"

namespace clusterd::bench {

class HaBacking {
 public:
  // Starts etcd and Ceph, makes the bucket and gives this process's
  // environment Ceph's credentials (the daemons it starts inherit them).
  // nullptr, with *why_not set, when either cannot start here.
  static std::unique_ptr<HaBacking> Start(std::string* why_not);

  // A head's flags for HA under `prefix` (its own keys in etcd and in the
  // bucket, so that heads of one run never share state).
  std::vector<std::string> HeadFlags(const std::string& prefix) const;
  // The etcd members' processes (this process's children named etcd).
  std::vector<pid_t> etcd_pids() const;
  // The size of the members' databases (each member's bbolt file,
  // <name>.data/member/snap/db), in bytes. Their WAL files are left out:
  // etcd makes each at its full 64 MiB ahead of use.
  uint64_t EtcdDbBytes() const;

 private:
  HaBacking() = default;
  std::unique_ptr<testing::CephFixture> ceph_;
  std::unique_ptr<testing::EtcdMembers> etcd_;
};

// etcd's own cost over a window, all members together.
class EtcdUsageWindow {
 public:
  explicit EtcdUsageWindow(const HaBacking& backing) : backing_(backing) {}
  // False when a member's /proc cannot be read (it died).
  bool Start();
  bool Stop();
  // CPU seconds of all members / wall seconds * 100: % of one core.
  double CpuPercent() const { return cpu_s_ / wall_s_ * 100; }
  double CpuSeconds() const { return cpu_s_; }
  // write_bytes of /proc/PID/io: what the members sent to the block layer
  // (their WAL fsyncs and bbolt's pages), and wchar: what they passed to write().
  uint64_t BytesToDisk() const { return disk_bytes_; }
  uint64_t BytesWritten() const { return written_bytes_; }
  // The databases' growth, bytes (bbolt's file grows in steps and does
  // not shrink; what compaction frees is reused inside it).
  int64_t DbGrowth() const { return db_growth_; }
  double WallSeconds() const { return wall_s_; }

 private:
  struct Sample {
    double cpu_s = 0;
    uint64_t disk_bytes = 0, written_bytes = 0, db_bytes = 0;
  };
  bool Read(Sample* sample) const;

  const HaBacking& backing_;
  std::vector<pid_t> pids_;
  Sample start_;
  std::chrono::steady_clock::time_point t0_;
  double cpu_s_ = 0, wall_s_ = 0;
  uint64_t disk_bytes_ = 0, written_bytes_ = 0;
  int64_t db_growth_ = 0;
};

}  // namespace clusterd::bench
