#include "ctrain/report.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ctrain {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : fallback;
}

// Human-readable: %g is enough for a log line; the socket path keeps full precision.
std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

bool report(const Metrics& metrics, const std::string& checkpoint) {
  // Rank from the environment rather than from init(): report() must work in
  // a program that never made a process group, and RANK is what init() reads.
  if (std::atoi(env_or("RANK", "0").c_str()) != 0) return false;

  // Always a line in the rank's log too, so `clusterctl logs -f` shows progress.
  std::string line = "[report]";
  for (const auto& kv : metrics) line += " " + kv.first + "=" + short_number(kv.second);
  if (!checkpoint.empty()) line += " checkpoint=" + checkpoint;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);

  const std::string socket_path = env_or("CLUSTER_AGENT_SOCKET", "");
  if (socket_path.empty()) return true;

  ReportMessage msg;
  msg.job_id = env_or("CLUSTER_JOB_ID", "");
  msg.attempt = std::atoll(env_or("CLUSTER_ATTEMPT", "0").c_str());
  msg.rank = 0;
  msg.values = metrics;
  msg.checkpoint = checkpoint;
  msg.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  AgentReply reply = send_report(socket_path, msg);
  if (!reply.ok) {
    std::fprintf(stderr, "[ctrain] warning: report not delivered: %s\n", reply.error.c_str());
    return false;
  }
  return true;
}

}  // namespace ctrain
