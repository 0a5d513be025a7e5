#include "ha_machines.h"

#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>

#include "cluster.pb.h"

namespace clusterd::testing {

using namespace std::chrono_literals;

namespace {

std::string Joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : separator) + part;
  return out;
}

void MustStart(const std::string& what, const RunResult& result) {
  if (result.exit_code != 0) {
    throw std::runtime_error(what + " failed (" + std::to_string(result.exit_code) + "): " + result.out + result.err);
  }
}

}  // namespace

std::unique_ptr<HaMachines> HaMachines::Start(std::string* skip_reason, const HaMachinesOptions& options) {
  if (!SimNetwork::Available(skip_reason)) return nullptr;
  if (!EtcdMembers::Installed(skip_reason)) return nullptr;
  std::unique_ptr<HaMachines> ha(new HaMachines());
  ha->options_ = options;
  SimNetwork& net = ha->net_;
  for (int i = 1; i <= kEtcdMembers; ++i) ha->etcd_machines_.push_back(&net.AddMachine("e" + std::to_string(i)));
  ha->storage_ = &net.AddMachine("s3");
  for (int i = 0; i < kHeads; ++i) ha->heads_.push_back(&net.AddMachine(ha->head_id(i)));
  for (int i = 1; i <= options.workers; ++i) ha->workers_.push_back(&net.AddMachine("w" + std::to_string(i)));
  ha->client_ = &net.AddMachine("client");

  // radosgw on its machine; its folder in /var/tmp, which the test sees too.
  CephPlace place;
  place.wrap = ha->storage_->EnterArgv();
  place.gateway_host = ha->storage_->ip();
  place.parent_dir = "/var/tmp";
  std::string ceph_why_not;
  ha->ceph_ = CephFixture::Start(&ceph_why_not, place);
  if (!ha->ceph_) {
    *skip_reason = "no Ceph radosgw here: " + ceph_why_not;
    return nullptr;
  }
  if (!ha->ceph_->CreateBucket(kBucket)) throw std::runtime_error(std::string("cannot create the bucket ") + kBucket);

  std::vector<EtcdMemberPlace> places;
  for (Machine* m : ha->etcd_machines_) places.push_back({m->EnterArgv(), m->ip()});
  ha->etcd_ = std::make_unique<EtcdMembers>(places, "/var/tmp");
  if (!ha->etcd_->error().empty()) throw std::runtime_error("etcd on machines: " + ha->etcd_->error());

  // head-a leads before head-b starts, so which one leads first is known.
  ha->StartHead(0);
  HaLeader first = ha->WaitForLeader(0, 20s, {0});
  if (first.head != 0) throw std::runtime_error("head-a did not lead within 20 s:\n" + ha->HeadLogTail(0));
  ha->StartHead(1);
  for (Machine* w : ha->workers_) ha->StartWorker(*w);
  if (!WaitFor([&] { return ha->WorkersAlive(); }, 30s, 200ms)) {
    throw std::runtime_error("the workers did not all register with head-a within 30 s:\n" + ha->HeadLogTail(0));
  }
  return ha;
}

HaMachines::~HaMachines() {
  // The members and Ceph first, by their pids, while those are alive and
  // theirs; then the network kills whatever else runs on the machines.
  etcd_.reset();
  ceph_.reset();
}

std::string HaMachines::head_address(int i) const { return heads_.at(i)->ip() + ":6379"; }

std::string HaMachines::heads_address() const {
  std::vector<std::string> all;
  for (int i = 0; i < kHeads; ++i) all.push_back(head_address(i));
  return Joined(all, ",");
}

std::string HaMachines::etcd_url() const { return etcd_->url("/clusterd-ha"); }

std::map<std::string, std::string> HaMachines::S3Env() const {
  // Each machine's own credentials (the same key here), none on a command line.
  return {{"AWS_ACCESS_KEY_ID", ceph_->access_key()},
          {"AWS_SECRET_ACCESS_KEY", ceph_->secret_key()},
          {"AWS_ENDPOINT_URL", ceph_->endpoint()},
          {"AWS_REGION", "us-east-1"}};
}

std::map<std::string, std::string> HaMachines::ClientEnv() const {
  std::map<std::string, std::string> env = S3Env();
  env["CLUSTER_ADDRESS"] = heads_address();
  env["CLUSTER_TOKEN"] = kToken;
  return env;
}

void HaMachines::WriteToken(Machine& machine) {
  const std::string path = machine.HostPath("/tmp/cluster.token");
  std::ofstream(path) << kToken << "\n";
  if (chmod(path.c_str(), 0600) != 0) throw std::runtime_error("chmod " + path + " failed");
}

void HaMachines::StartHead(int i) {
  Machine& m = head(i);
  WriteToken(m);
  std::vector<std::string> argv = {"clusterd", "start", "--head", "--port", "6379", "--num-cpus", "0", "--num-gpus",
                                   "0", "--node-name", head_id(i), "--state-dir", "/tmp/state", "--ha", etcd_url(),
                                   "--store", std::string("s3://") + kBucket + "/cluster", "--token-file",
                                   "/tmp/cluster.token"};
  argv.insert(argv.end(), options_.head_flags.begin(), options_.head_flags.end());
  MustStart(head_id(i) + ": clusterd start --head --ha", m.Run(argv, S3Env(), 60s));
}

RunResult HaMachines::StopHead(int i, bool force) {
  std::vector<std::string> argv = {"clusterd", "stop"};
  if (force) argv.push_back("--force");
  return head(i).Run(argv, {}, 60s);
}

void HaMachines::RestartHead(int i) {
  MustStart(head_id(i) + ": clusterd stop", StopHead(i));
  StartHead(i);
}

void HaMachines::StartWorker(Machine& worker) {
  WriteToken(worker);
  std::vector<std::string> argv = {"clusterd", "start", "--address", heads_address(), "--token-file",
                                   "/tmp/cluster.token", "--num-cpus", std::to_string(options_.worker_cpus),
                                   "--num-gpus", "0"};
  argv.insert(argv.end(), options_.worker_flags.begin(), options_.worker_flags.end());
  MustStart(worker.name() + ": clusterd start", worker.Run(argv, S3Env(), 60s));
}

RunResult HaMachines::Ctl(const std::string& args, std::chrono::milliseconds timeout) {
  return client_->Shell("mkdir -p /tmp/job && cd /tmp/job && clusterctl " + args, ClientEnv(), timeout);
}

void HaMachines::Put(const std::string& name, const std::string& content) {
  client_->Run({"mkdir", "-p", "/tmp/job"});
  std::ofstream(client_->HostPath("/tmp/job/" + name)) << content;
}

HaLeader HaMachines::Leader(const std::vector<int>& heads) {
  // "Heads (HA, leader: head-a):" then " head-a at IP:6379: leader for 12.3 s, ..." (the leader's own line).
  static const std::regex leads(R"( (head-[ab]) at [0-9.:]+: leader for ([0-9.]+) s)");
  for (int i : heads) {
    RunResult status = client_->Run({"clusterctl", "--address", head_address(i), "--token", kToken, "--timeout-ms",
                                     "1000", "status"},
                                    {}, 5s);
    std::smatch match;
    if (status.exit_code != 0 || !std::regex_search(status.out, match, leads)) continue;
    HaLeader leader;
    leader.id = match[1].str();
    leader.head = leader.id == head_id(0) ? 0 : 1;
    leader.leading_since_unix_ms = NowUnixMs() - static_cast<int64_t>(std::stod(match[2].str()) * 1000.0);
    return leader;
  }
  return {};
}

HaLeader HaMachines::WaitForLeader(int want, std::chrono::milliseconds limit, const std::vector<int>& heads) {
  HaLeader last;
  WaitFor([&] {
    last = Leader(heads);
    return last.head == want;
  }, limit, 50ms);
  return last;
}

void HaMachines::KillMachine(Machine& machine) {
  if (&machine == storage_) throw std::invalid_argument("HaMachines::KillMachine: not the radosgw's machine");
  for (int i = 0; i < kEtcdMembers; ++i) {
    if (etcd_machines_[i] == &machine) etcd_->Kill(i);
  }
  machine.KillAll();
}

void HaMachines::KillEtcdMember(int i) { etcd_->Kill(i); }

void HaMachines::RestartEtcdMember(int i) { etcd_->Restart(i); }

bool HaMachines::WorkersAlive() {
  RunResult status = Ctl("status --json", 10s);
  ClusterStatus parsed;
  if (status.exit_code != 0 || !google::protobuf::util::JsonStringToMessage(status.out, &parsed).ok()) return false;
  size_t alive = 0;
  for (const auto& node : parsed.nodes()) alive += node.state() == ALIVE ? 1 : 0;
  return alive == workers_.size();
}

std::string HaMachines::HeadLogTail(int i, size_t lines) {
  RunResult tail = head(i).Shell("tail -q -n " + std::to_string(lines) + " /tmp/clusterd/session_*/logs/*.log");
  return head_id(i) + "'s log:\n" + tail.out + tail.err;
}

}  // namespace clusterd::testing
