// The chaos run's table (markdown, as docs/RELIABILITY.md keeps it) and the
// lists behind every count that should be 0.
#include <sstream>

#include <fmt/format.h>

#include "chaos_run.h"

namespace clusterd::bench {

namespace {

std::string Mib(int64_t bytes) {
  return bytes < (1 << 20) ? fmt::format("{:.0f} KiB", bytes / 1024.0) : fmt::format("{:.1f} MiB", bytes / 1048576.0);
}

void Row(std::ostringstream& out, const std::string& metric, const std::string& value, const std::string& target = "",
         std::optional<bool> met = std::nullopt) {
  out << "| " << metric << " | " << value << " | " << (target.empty() ? "-" : target) << " | "
      << (met ? (*met ? "ok" : "**MISSED**") : "info") << " |\n";
}

void Count(std::ostringstream& out, const std::string& metric, size_t n) {
  Row(out, metric, std::to_string(n), "0", n == 0);
}

void List(std::ostringstream& out, const std::string& title, const std::vector<std::string>& lines) {
  if (lines.empty()) return;
  out << "\n" << title << ":\n";
  for (const std::string& line : lines) out << "- " << line << "\n";
}

}  // namespace

std::string FormatResult(const ChaosOptions& options, const ChaosResult& r) {
  std::ostringstream out;
  out << "| metric | value | target | result |\n| --- | --- | --- | --- |\n";
  std::string kinds;
  for (const auto& [kind, n] : r.submitted_by_kind) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, kind);
  Row(out, "jobs submitted", fmt::format("{} ({})", r.submitted, kinds));
  int faults = 0;
  for (const auto& [kind, n] : r.faults) faults += n;
  Row(out, "faults injected", std::to_string(faults));
  for (const auto& [kind, n] : r.faults) Row(out, "- " + kind, std::to_string(n));
  Row(out, "malformed RPCs sent", std::to_string(r.rpc_calls));
  Row(out, "malformed job files refused with a one-line error", std::to_string(r.bad_files_refused));
  Count(out, "jobs lost (submitted, not listed)", r.lost.size());
  Count(out, "jobs in a wrong final state", r.wrong.size());
  Count(out, "jobs stuck (not final after the drain)", r.stuck.size());
  Count(out, "leaked processes of jobs", r.leaked.size());
  Count(out,
        options.ha ? "state mismatches on the next leader (after the leader's SIGKILL and clusterd stop)"
                   : "journal replay mismatches (after SIGKILL and after clusterd stop)",
        r.replay_mismatches.size());
  Count(out, "daemon crashes (head, agents)", static_cast<size_t>(r.unexpected_head_deaths + r.unexpected_agent_deaths));
  Count(out, "other findings", r.findings.size() - static_cast<size_t>(r.unexpected_head_deaths + r.unexpected_agent_deaths));
  Row(out, "checkpointing jobs retried and SUCCEEDED / resumed from a checkpoint",
      fmt::format("{} / {}", r.checkpoint_retried, r.checkpoint_resumed));
  if (options.ha) {
    Row(out, "submissions refused during a fault on the heads' side (not acknowledged)",
        std::to_string(r.refused_while_down));
  } else {
    Row(out, "head's largest state (journal + store + logs)", Mib(r.max_state_bytes));
    Row(out, "- of which journal", Mib(r.max_journal_bytes));
  }
  Row(out, "duration (faults and jobs; whole run)", fmt::format("{} s; {:.0f} s", options.duration_s, r.seconds));
  Row(out, "seed", std::to_string(options.seed));
  if (!r.setup_error.empty()) out << "\nTHE RUN COULD NOT COMPLETE: " << r.setup_error << "\n";
  List(out, "Lost jobs", r.lost);
  List(out, "Jobs in a wrong final state", r.wrong);
  List(out, "Stuck jobs", r.stuck);
  List(out, "Leaked processes", r.leaked);
  List(out, "Replay mismatches", r.replay_mismatches);
  List(out, "Findings", r.findings);
  out << "\nreplay: bench/chaos/run.sh" << (options.ha ? " --ha" : "") << " --duration " << options.duration_s
      << " --seed " << options.seed << "\n";
  return out.str();
}

}  // namespace clusterd::bench
