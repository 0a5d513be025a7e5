// The faults on the heads' side: the head's SIGKILL (both modes), and in HA
// (`chaos --ha`) a head machine's crash, an etcd member's SIGKILL, and a
// cut link of a head or an etcd member. One at a time, so that a quorum of
// etcd and a head that can lead are always there; each is undone after a
// while (the machine's head or the member started again, the link back)
// and the cluster must then have a leader with every worker ALIVE. No job
// is touched by them: the heads must carry every job through.
#include <thread>

#include "chaos.h"
#include "ha_machines.h"

namespace clusterd::bench {

using namespace std::chrono_literals;

namespace {

// After a fault on the heads' side is undone, calls may still be refused
// while a head finds the leader again or the workers register.
constexpr int64_t kSettleMs = 10000;

int IndexOf(testing::Machine* machine, const std::function<testing::Machine&(int)>& at, int count) {
  for (int i = 0; i < count; ++i) {
    if (&at(i) == machine) return i;
  }
  return -1;
}

}  // namespace

bool Chaos::InjectControlPlaneFault(const std::string& kind, int64_t now) {
  testing::HaMachines* ha = c_.ha();
  if (kind == "head_kill") {
    // A single head: nothing else may be open (its loop waits while it is
    // down). In HA: no other fault on the heads' side.
    if (ha ? ControlPlaneFaultOpen() : !open_.empty()) return false;
    if (!c_.KillServingHead()) return false;
    if (!ha) head_down_ = true;
    int hold_ms = Uniform(300, 3000);
    open_.push_back({kind, nullptr, now + hold_ms, 0});
    Note(fmt::format("head_kill: SIGKILL of the serving head, restarted in {} ms", hold_ms));
    return true;
  }
  if (!ha || ControlPlaneFaultOpen()) return false;
  testing::Machine* machine = nullptr;
  if (kind == "head_machine_kill" || kind == "head_link_cut") {
    // Mostly the leader's: that is the failover; sometimes the standby's.
    testing::HaLeader leader = ha->Leader();
    int i = leader.head >= 0 && Uniform(0, 3) > 0 ? leader.head : Uniform(0, testing::HaMachines::kHeads - 1);
    machine = &ha->head(i);
  } else {
    machine = &ha->etcd_machine(Uniform(0, testing::HaMachines::kEtcdMembers - 1));
  }
  int hold_ms = Uniform(1000, 6000);
  if (kind == "head_machine_kill") ha->KillMachine(*machine);
  if (kind == "etcd_kill") {
    ha->KillEtcdMember(IndexOf(machine, [&](int i) -> testing::Machine& { return ha->etcd_machine(i); },
                               testing::HaMachines::kEtcdMembers));
  }
  if (IsLinkCut(kind)) machine->CutLink();
  open_.push_back({kind, machine, now + hold_ms, 0});
  Note(fmt::format("{} on {} for {} ms", kind, machine->name(), hold_ms));
  return true;
}

void Chaos::RestoreControlPlane(const OpenFault& fault) {
  int64_t began = UnixMs();
  testing::HaMachines* ha = c_.ha();
  if (fault.kind == "head_kill" || fault.kind == "head_machine_kill") {
    RestartHead("after " + fault.kind);
  } else if (fault.kind == "etcd_kill") {
    ha->RestartEtcdMember(IndexOf(fault.machine, [&](int i) -> testing::Machine& { return ha->etcd_machine(i); },
                                  testing::HaMachines::kEtcdMembers));
    if (!ha->EtcdHealthy(10s)) Finding("etcd not healthy 10 s after " + fault.machine->name() + "'s member restarted");
  } else if (IsLinkCut(fault.kind)) {
    fault.machine->RestoreLink();
  }
  if (ha) {
    if (!c_.WaitAlive(WorkersWithoutFault(), 30s)) {
      Finding(fmt::format("{} on {}: no leader with every worker ALIVE 30 s after it ended", fault.kind,
                          fault.machine ? fault.machine->name() : std::string("the serving head")));
    }
    head_pids_ = c_.HeadPids();
    control_plane_settled_ms_ = UnixMs() + kSettleMs;
  }
  Note(fmt::format("{} undone, leader and workers ALIVE after {} ms", fault.kind, UnixMs() - began));
}

}  // namespace clusterd::bench
