#include "ceph_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness.h"

namespace clusterd::testing {

namespace {

const char* const kBinaries[] = {"/usr/bin/monmaptool", "/usr/bin/ceph-mon", "/usr/bin/ceph-osd", "/usr/bin/ceph",
                                 "/usr/bin/radosgw", "/usr/bin/radosgw-admin", "/usr/bin/curl"};

std::string NewUuid() {
  std::ifstream in("/proc/sys/kernel/random/uuid");
  std::string uuid;
  in >> uuid;
  return uuid;
}

}  // namespace

std::unique_ptr<CephFixture> CephFixture::Start(std::string* why_not, const CephPlace& place) {
  for (const char* binary : kBinaries) {
    if (access(binary, X_OK) != 0) {
      *why_not = std::string(binary) +
                 " is missing (apt-get install ceph-mon ceph-osd radosgw ceph-common curl)";
      return nullptr;
    }
  }
  std::unique_ptr<CephFixture> ceph(new CephFixture());
  ceph->place_ = place;
  if (!ceph->BringUp(why_not)) return nullptr;  // the destructor cleans up
  return ceph;
}

bool CephFixture::BringUp(std::string* why_not) {
  std::string pattern = place_.parent_dir + "/clusterd-ceph-XXXXXX";
  std::vector<char> dir(pattern.begin(), pattern.end());
  dir.push_back('\0');
  if (mkdtemp(dir.data()) == nullptr) {
    *why_not = "cannot make a temporary folder";
    return false;
  }
  dir_ = dir.data();
  for (const char* sub : {"/run", "/log", "/mon", "/osd", "/osd/ceph-0", "/rgw"}) mkdir((dir_ + sub).c_str(), 0700);
  mon_port_ = FreePort();
  gateway_port_ = FreePort();
  std::string fsid = NewUuid();
  std::string mon_addr = "[v2:127.0.0.1:" + std::to_string(mon_port_) + "]";
  conf_ = dir_ + "/ceph.conf";
  {
    std::ofstream conf(conf_);
    // Why each line: ../shared/NOTES.md. In short, no auth (and crc mode,
    // or radosgw waits for a secure session for ever), a fast paxos (or
    // radosgw's first start takes 13 s), one copy of everything in memory.
    conf << "[global]\n"
         << "fsid = " << fsid << "\n"
         << "mon host = " << mon_addr << "\n"
         << "auth cluster required = none\nauth service required = none\nauth client required = none\n"
         << "run dir = " << dir_ << "/run\n"
         << "admin socket = " << dir_ << "/run/$name.asok\n"
         << "log file = " << dir_ << "/log/$name.log\n"
         << "pid file = " << dir_ << "/run/$name.pid\n"
         << "mon data = " << dir_ << "/mon/$id\n"
         << "osd data = " << dir_ << "/osd/ceph-$id\n"
         << "osd objectstore = memstore\n"
         // memstore does not enforce its size, but the OSD goes read-only
         // ("full status failsafe") once its data pass 95% of it: room for
         // a benchmark's 1 GiB objects. RAM is used only as data arrive.
         << "memstore device bytes = " << (int64_t{8} << 30) << "\n"
         << "osd pool default size = 1\nosd pool default min size = 1\n"
         << "mon allow pool size one = true\nosd crush chooseleaf type = 0\n"
         << "mon warn on pool no redundancy = false\n"
         << "paxos propose interval = 0.1\n"
         << "[client]\nms mon client mode = crc\n"
         << "[client.rgw.gw]\n"
         << "rgw frontends = beast endpoint=" << place_.gateway_host << ":" << gateway_port_ << "\n"
         << "rgw data = " << dir_ << "/rgw\n";
  }
  auto env = std::map<std::string, std::string>{{"CEPH_CONF", conf_}};
  auto step = [&](const std::vector<std::string>& argv, const std::string& what) {
    RunResult r = RunHere(argv, env, std::chrono::seconds(30));
    if (r.exit_code == 0) return true;
    *why_not = what + " failed (exit " + std::to_string(r.exit_code) + "): " + r.err.substr(0, 400);
    return false;
  };
  if (!step({"/usr/bin/monmaptool", "--create", "--fsid", fsid, "--addv", "a", mon_addr, dir_ + "/monmap"},
            "monmaptool")) {
    return false;
  }
  if (!step({"/usr/bin/ceph-mon", "-c", conf_, "-i", "a", "--mkfs", "--monmap", dir_ + "/monmap"}, "ceph-mon --mkfs")) {
    return false;
  }
  Spawn("mon", {"/usr/bin/ceph-mon", "-c", conf_, "-i", "a", "-f"});
  std::string osd_uuid = NewUuid();
  if (!step({"/usr/bin/ceph", "-c", conf_, "--connect-timeout", "20", "osd", "new", osd_uuid}, "ceph osd new")) {
    *why_not += Tail("mon.out");
    return false;
  }
  if (!step({"/usr/bin/ceph-osd", "-c", conf_, "-i", "0", "--mkfs", "--osd-uuid", osd_uuid}, "ceph-osd --mkfs")) {
    return false;
  }
  Spawn("osd", {"/usr/bin/ceph-osd", "-c", conf_, "-i", "0", "-f"});
  gateway_pid_ = Spawn("rgw", {"/usr/bin/radosgw", "-c", conf_, "-n", "client.rgw.gw", "-f"});
  if (!WaitForGateway()) {
    *why_not = "radosgw did not answer on port " + std::to_string(gateway_port_) + " within 60 s" + Tail("rgw.out");
    return false;
  }
  if (!step({"/usr/bin/radosgw-admin", "-c", conf_, "user", "create", "--uid=clusterd-test",
             "--display-name=clusterd-test", "--access-key=" + access_key_, "--secret-key=" + secret_key_},
            "radosgw-admin user create")) {
    return false;
  }
  return true;
}

CephFixture::~CephFixture() {
  for (pid_t pid : pids_) kill(pid, SIGKILL);
  for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  if (!dir_.empty()) Run({"/bin/rm", "-rf", dir_});
}

std::string CephFixture::endpoint() const {
  return "http://" + place_.gateway_host + ":" + std::to_string(gateway_port_);
}

std::vector<std::string> CephFixture::Wrapped(std::vector<std::string> argv) const {
  argv.insert(argv.begin(), place_.wrap.begin(), place_.wrap.end());
  return argv;
}

RunResult CephFixture::RunHere(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                               std::chrono::milliseconds timeout) const {
  return Run(Wrapped(argv), env, timeout);
}

std::map<std::string, std::string> CephFixture::Env() const {
  return {{"AWS_ACCESS_KEY_ID", access_key_},
          {"AWS_SECRET_ACCESS_KEY", secret_key_},
          {"AWS_ENDPOINT_URL", endpoint()},
          {"AWS_REGION", "us-east-1"}};
}

S3ClientOptions CephFixture::ClientOptions() const {
  S3ClientOptions options;
  options.endpoint = {endpoint(), "us-east-1"};
  options.credentials = {access_key_, secret_key_, ""};
  options.part_bytes = 5 << 20;
  return options;
}

pid_t CephFixture::Spawn(const std::string& name, const std::vector<std::string>& argv) {
  std::string out = dir_ + "/log/" + name + ".out";
  pid_t pid = fork();
  if (pid == 0) {
    // Files of its own for every stream: a daemon holding a pipe of ours
    // open would keep a reader of it waiting.
    int in = open("/dev/null", O_RDONLY);
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    dup2(in, STDIN_FILENO);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    setenv("CEPH_CONF", conf_.c_str(), 1);
    std::vector<std::string> wrapped = Wrapped(argv);
    std::vector<char*> args;
    for (const auto& a : wrapped) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  if (pid > 0) pids_.push_back(pid);
  return pid;
}

bool CephFixture::GatewayAlive() const { return gateway_pid_ > 0 && ProcessAlive(gateway_pid_); }

bool CephFixture::WaitForGateway() {
  // Any HTTP answer means the frontend is up (anonymous GET / lists nothing).
  return WaitFor(
      [&] {
        if (!GatewayAlive()) return false;
        RunResult r = RunHere({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2",
                               endpoint() + "/"},
                              {}, std::chrono::seconds(5));
        return r.exit_code == 0 && r.out != "000";
      },
      std::chrono::seconds(60), std::chrono::milliseconds(100));
}

void CephFixture::KillGateway() {
  if (gateway_pid_ <= 0) return;
  kill(gateway_pid_, SIGKILL);
  waitpid(gateway_pid_, nullptr, 0);
  pids_.erase(std::remove(pids_.begin(), pids_.end(), gateway_pid_), pids_.end());
  gateway_pid_ = -1;
}

bool CephFixture::RestartGateway() {
  KillGateway();
  gateway_pid_ = Spawn("rgw", {"/usr/bin/radosgw", "-c", conf_, "-n", "client.rgw.gw", "-f"});
  return WaitForGateway();
}

bool CephFixture::CreateBucket(const std::string& bucket) {
  // curl 7.88 signs SigV4 but sends no payload hash of its own, which S3
  // requires: the empty body's is given.
  // The key comes from a file, not argv, as any secret should.
  std::string config = dir_ + "/curl-user.conf";
  std::ofstream(config) << "user = \"" << access_key_ << ":" << secret_key_ << "\"\n";
  RunResult r = RunHere({"/usr/bin/curl", "-s", "-f", "-X", "PUT", "--aws-sigv4", "aws:amz:us-east-1:s3", "-K", config, "-H",
                     "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                     endpoint() + "/" + bucket},
                    {}, std::chrono::seconds(30));
  return r.exit_code == 0;
}

std::string CephFixture::Tail(const std::string& log_name) const {
  std::ifstream in(dir_ + "/log/" + log_name);
  std::stringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  if (text.size() > 400) text = text.substr(text.size() - 400);
  return text.empty() ? "" : " (" + log_name + ": " + text + ")";
}

}  // namespace clusterd::testing
