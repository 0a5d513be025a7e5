#include "copy_baselines.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace clusterd::bench {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

bool ReadStamp(const std::string& path, int64_t* start, int64_t* end) {
  std::istringstream in(ReadAll(path));
  return static_cast<bool>(in >> *start >> *end);
}

uint64_t FileBytes(const std::string& root) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(root, ec)) {
    if (entry.is_regular_file()) bytes += entry.file_size();
  }
  return bytes;
}

bool TimeTarOverNc(const TarOverNc& c, StampedTimes* times, std::string* error) {
  std::vector<testing::Machine*> receivers = {c.to};
  receivers.insert(receivers.end(), c.also_to.begin(), c.also_to.end());
  std::string start = c.stamps + "/" + c.name;
  std::vector<pid_t> listeners;
  std::string send;
  bool listening = true;
  for (size_t i = 0; i < receivers.size(); ++i) {
    std::string port = std::to_string(c.port + static_cast<int>(i));
    std::string done = c.stamps + "/" + c.name + "-done" + (i == 0 ? "" : "-" + std::to_string(i));
    std::string receive = "nc -l " + port + " | tar -C " + c.dest + " -xf -";
    if (c.sync) receive += " && sync -f " + c.dest;
    std::string log = c.log + (i == 0 ? "" : "-" + std::to_string(i));
    listeners.push_back(
        receivers[i]->Spawn({"/bin/sh", "-c", receive + " && " + c.stamp_run + " " + done}, {}, log, log));
    listening = listening && testing::WaitFor(
        [&] { return !receivers[i]->Run({"ss", "-Hltn", "sport = :" + port}).out.empty(); }, 10s, 10ms);
    std::string pipeline = "tar -C " + c.src + " -cf - . | nc -N " + receivers[i]->ip() + " " + port;
    send += receivers.size() == 1 ? pipeline : "(" + pipeline + ") & ";
  }
  if (receivers.size() > 1) send += "wait";
  testing::RunResult sent;
  if (listening) sent = c.from->Run({c.stamp_run, start, "/bin/sh", "-c", send}, {}, 120s);
  bool ok = listening && sent.exit_code == 0;
  int64_t ignored = 0;
  ok = ok && ReadStamp(c.from->HostPath(start), &times->start_ns, &ignored);
  times->done_ns = 0;
  for (size_t i = 0; i < receivers.size(); ++i) {
    int status = -1;
    bool exited = testing::WaitFor([&] { return waitpid(listeners[i], &status, WNOHANG) == listeners[i]; }, 60s, 1ms);
    if (!exited) {
      kill(listeners[i], SIGKILL);
      waitpid(listeners[i], &status, 0);
    }
    int64_t done = 0;
    std::string done_file = c.stamps + "/" + c.name + "-done" + (i == 0 ? "" : "-" + std::to_string(i));
    ok = ok && exited && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
         ReadStamp(receivers[i]->HostPath(done_file), &done, &ignored);
    times->done_ns = std::max(times->done_ns, done);
  }
  if (!ok) *error = c.name + ": the tar | nc copy failed: " + sent.err + ReadAll(c.log);
  return ok;
}

bool TimeCp(testing::Machine& machine, const std::string& stamp_run, const std::string& src, const std::string& dest,
            bool sync, const std::string& stamp_file, StampedTimes* times, std::string* error) {
  std::string script = "cp -r " + src + " " + dest + (sync ? " && sync -f " + dest : "");
  testing::RunResult copied = machine.Run({stamp_run, stamp_file, "/bin/sh", "-c", script}, {}, 120s);
  bool ok = copied.exit_code == 0 && ReadStamp(machine.HostPath(stamp_file), &times->start_ns, &times->done_ns);
  if (!ok) *error = "cp -r " + src + " on " + machine.name() + " failed: " + copied.err;
  return ok;
}

}  // namespace clusterd::bench
