#include "copy_baselines.h"

#include <signal.h>
#include <sys/wait.h>

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
  std::string port = std::to_string(c.port);
  std::string start = c.stamps + "/" + c.name, done = c.stamps + "/" + c.name + "-done";
  std::string receive = "nc -l " + port + " | tar -C " + c.dest + " -xf -";
  if (c.sync) receive += " && sync -f " + c.dest;
  pid_t listener = c.to->Spawn({"/bin/sh", "-c", receive + " && " + c.stamp_run + " " + done}, {}, c.log, c.log);
  bool listening = testing::WaitFor(
      [&] { return !c.to->Run({"ss", "-Hltn", "sport = :" + port}).out.empty(); }, 10s, 10ms);
  testing::RunResult sent;
  if (listening) {
    sent = c.from->Run({c.stamp_run, start, "/bin/sh", "-c",
                        "tar -C " + c.src + " -cf - . | nc -N " + c.to->ip() + " " + port},
                       {}, 120s);
  }
  int status = -1;
  bool exited = testing::WaitFor([&] { return waitpid(listener, &status, WNOHANG) == listener; }, 60s, 1ms);
  if (!exited) {
    kill(listener, SIGKILL);
    waitpid(listener, &status, 0);
  }
  int64_t ignored = 0;
  bool ok = listening && sent.exit_code == 0 && exited && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
            ReadStamp(c.from->HostPath(start), &times->start_ns, &ignored) &&
            ReadStamp(c.to->HostPath(done), &times->done_ns, &ignored);
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
