// chaos_report_flood: a rank that reports as fast as it can.
// `chaos_report_flood SECONDS [METRICS]`: for SECONDS, every rank
// sends report after report of METRICS values (1 by default, at most 1000)
// over its agent's socket, one at a time as report() does, and counts how
// each was answered. The agent holds it to report_rate_per_s (a report over
// the rate waits its turn) and report_slots_per_rank; the head keeps
// job_metrics_max_records of them. What the run checks meanwhile is that
// other jobs' ranks on the same node still report and the head still
// answers. Prints one line at the end:
//   chaos_report_flood: rank R: N reports in S s (X a second): ok A, refused B, unreachable C[; first refusal: ...]
// and exits 0 (a flood's refusals are the agent doing its job), 2 on bad
// arguments. Linked statically, like chaos_rank.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ctrain/agent_wire.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: chaos_report_flood SECONDS [METRICS]\n");
    return 2;
  }
  const double seconds = std::strtod(argv[1], nullptr);
  const long metrics = argc == 3 ? std::strtol(argv[2], nullptr, 10) : 1;
  if (!(seconds > 0) || metrics < 1 || metrics > 1000) {
    std::fprintf(stderr, "chaos_report_flood: SECONDS must be > 0 and METRICS 1..1000\n");
    return 2;
  }
  const char* socket_path = std::getenv("CLUSTER_AGENT_SOCKET");
  const char* rank_env = std::getenv("RANK");
  if (!socket_path || !*socket_path) {
    std::fprintf(stderr, "chaos_report_flood: needs CLUSTER_AGENT_SOCKET (run it as a clusterd job)\n");
    return 2;
  }
  const int rank = rank_env ? std::atoi(rank_env) : 0;

  ctrain::ReportMessage message;
  message.rank = rank;
  for (long i = 0; i < metrics; ++i) message.values.push_back({"flood_" + std::to_string(i), 0.0});
  long sent = 0, ok = 0, refused = 0, unreachable = 0;
  std::string first_refusal;
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    message.values[0].second = static_cast<double>(sent);
    message.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
    ctrain::AgentReply reply = ctrain::send_report(socket_path, message);
    ++sent;
    if (reply.ok) {
      ++ok;
    } else if (reply.error.rfind("cannot ", 0) == 0 || reply.error.rfind("no reply", 0) == 0) {
      ++unreachable;  // send_report's own words: the report never got an answer
    } else {
      ++refused;
      if (first_refusal.empty()) first_refusal = reply.error;
    }
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("chaos_report_flood: rank %d: %ld reports in %.1f s (%.0f a second): ok %ld, refused %ld, unreachable %ld%s%s\n",
              rank, sent, took, sent / took, ok, refused, unreachable, first_refusal.empty() ? "" : "; first refusal: ",
              first_refusal.c_str());
  return 0;
}
