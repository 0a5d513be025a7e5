// The node agent's CPU busy share, from two reads of /proc/stat.
#include "daemon/agent/cpu_utilization.h"

#include <catch2/catch.hpp>

#include <string>

#include "temp_tree.h"

namespace clusterd {
namespace {

// A /proc/stat as Linux writes it: the aggregate line, then each CPU's.
std::string ProcStat(const std::string& cpu_fields) {
  return "cpu  " + cpu_fields +
         "\n"
         "cpu0 1 2 3 4 5 6 7 8 0 0\n"
         "intr 123 0 0\n"
         "ctxt 456\n";
}

TEST_CASE("cpu utilization: /proc/stat's cpu line gives busy and total jiffies", "[cpu_utilization]") {
  // user nice system idle iowait irq softirq steal guest guest_nice
  auto jiffies = ParseProcStatCpu(ProcStat("100 20 30 800 50 5 15 10 40 2"));
  REQUIRE(jiffies);
  // Busy: user, nice, system, irq, softirq, steal; guest is inside user.
  CHECK(jiffies->busy == 100 + 20 + 30 + 5 + 15 + 10);
  // Idle and iowait count as not busy.
  CHECK(jiffies->total == jiffies->busy + 800 + 50);
  // An old kernel's four fields: what is missing counts 0.
  auto old = ParseProcStatCpu("cpu 10 0 10 80\n");
  REQUIRE(old);
  CHECK(old->busy == 20);
  CHECK(old->total == 100);
}

TEST_CASE("cpu utilization: a file without a whole cpu line gives nothing", "[cpu_utilization]") {
  CHECK_FALSE(ParseProcStatCpu(""));
  CHECK_FALSE(ParseProcStatCpu("cpu0 1 2 3 4\nintr 1\n"));  // per-CPU lines only
  CHECK_FALSE(ParseProcStatCpu("cpu  1 2 3\n"));           // too few fields
  CHECK_FALSE(ParseProcStatCpu("cpu  x y z w\n"));
}

TEST_CASE("cpu utilization: the busy share is the busy delta over the total delta", "[cpu_utilization]") {
  CHECK(*BusyFractionBetween({100, 400}, {175, 500}) == Approx(0.75));
  CHECK(*BusyFractionBetween({100, 400}, {100, 500}) == 0);
  CHECK(*BusyFractionBetween({100, 400}, {200, 500}) == 1);
  // No time passed, or the counters went back (another boot): unknown.
  CHECK_FALSE(BusyFractionBetween({100, 400}, {100, 400}));
  CHECK_FALSE(BusyFractionBetween({100, 400}, {50, 450}));
  CHECK_FALSE(BusyFractionBetween({100, 400}, {150, 300}));
}

TEST_CASE("cpu utilization: the meter's first sample is unknown, each next one covers the time since the last",
          "[cpu_utilization]") {
  testing::TempTree tree;
  tree.Write("stat", ProcStat("100 0 100 800 0 0 0 0 0 0"));
  CpuUtilizationMeter meter(tree.Path("stat"));
  CHECK_FALSE(meter.Sample());  // nothing to compare with yet
  tree.Write("stat", ProcStat("150 0 150 900 0 0 0 0 0 0"));  // 100 busy of 200
  auto half = meter.Sample();
  REQUIRE(half);
  CHECK(*half == Approx(0.5));
  tree.Write("stat", ProcStat("160 0 150 990 0 0 0 0 0 0"));  // 10 busy of 100
  CHECK(*meter.Sample() == Approx(0.1));
  // Unreadable: unknown, and the next read after it starts again.
  tree.Write("stat", "garbage\n");
  CHECK_FALSE(meter.Sample());
  tree.Write("stat", ProcStat("200 0 150 1050 0 0 0 0 0 0"));
  CHECK_FALSE(meter.Sample());
  tree.Write("stat", ProcStat("230 0 150 1060 0 0 0 0 0 0"));  // 30 busy of 40
  CHECK(*meter.Sample() == Approx(0.75));
}

TEST_CASE("cpu utilization: this machine's /proc/stat is read, a share within 0..1", "[cpu_utilization]") {
  CpuUtilizationMeter meter;
  meter.Sample();
  // Burn some CPU so that the jiffies move even on an idle machine.
  volatile double sink = 0;
  for (int i = 0; i < 50'000'000; ++i) sink = sink + i * 0.5;
  auto busy = meter.Sample();
  REQUIRE(busy);
  CHECK(*busy >= 0);
  CHECK(*busy <= 1);
}

}  // namespace
}  // namespace clusterd
