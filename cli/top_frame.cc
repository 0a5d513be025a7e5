#include "cli/top_frame.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "cli/job_printer.h"
#include "common/resources.h"
#include "common/text.h"

namespace clusterd::cli {

namespace {

constexpr int kBarCells = 10;
constexpr size_t kMaxNameChars = 24;
// Above the tables: the title line and a blank one; each table: its head
// line, and a blank line between the two tables.
constexpr int kFixedLines = 5;

const char* NodeStateText(NodeState state) {
  switch (state) {
    case ALIVE: return "ALIVE";
    case DRAINING: return "DRAINING";
    case DEAD: return "DEAD";
    default: return "UNKNOWN";
  }
}

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Characters as a terminal counts them (one per UTF-8 sequence; wide
// characters are not told apart).
size_t CharCount(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += IsContinuationByte(c) ? 0 : 1;
  return n;
}

// The first `chars` characters of `text`.
std::string CutToChars(const std::string& text, size_t chars) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!IsContinuationByte(text[i]) && seen++ == chars) return text.substr(0, i);
  }
  return text;
}

// A name from a user, safe to put on a terminal and at most `max_chars` long.
std::string Shown(const std::string& text, size_t max_chars = kMaxNameChars) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out += byte < 0x20 || byte == 0x7F ? '?' : c;
  }
  // C1 controls, bidirectional overrides and the like are multi-byte: the
  // whole name is replaced rather than picked apart.
  if (HasTerminalControls(out)) out = std::string(std::min<size_t>(CharCount(out), max_chars), '?');
  if (CharCount(out) > max_chars) out = CutToChars(out, max_chars - 3) + "...";
  return out;
}

std::string PadRight(const std::string& text, size_t chars) {
  const size_t have = CharCount(text);
  return have >= chars ? text : text + std::string(chars - have, ' ');
}

// Rows of cells as columns two spaces apart, the last one not padded.
std::vector<std::string> Columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], CharCount(row[i]));
  }
  std::vector<std::string> lines;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) line += i + 1 == row.size() ? row[i] : PadRight(row[i], widths[i] + 2);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::string OneDecimal(double value) { return fmt::format("{:.1f}", value); }

std::vector<std::string> NodeCells(const NodeInfo& node) {
  const double cpus = Amount(node.total(), kCpu);
  const double memory = Amount(node.total(), kMemory);
  const double gpus = Amount(node.total(), kGpu);
  const double gpus_allocated = gpus - Amount(node.available(), kGpu);
  const NodeUsage& usage = node.usage();
  const auto bytes = [](double value) { return HumanBytes(value > 0 ? static_cast<uint64_t>(value) : 0); };
  return {Shown(node.name()) + (node.is_head() ? " *" : ""),
          NodeStateText(node.state()),
          UsageBar(usage.cpu_load(), cpus, kBarCells) + " " + OneDecimal(usage.cpu_load()) + "/" +
              FormatAmount(kCpu, cpus),
          UsageBar(usage.memory_used_bytes(), memory, kBarCells) + " " + bytes(usage.memory_used_bytes()) + "/" +
              bytes(memory),
          gpus > 0 ? UsageBar(gpus_allocated, gpus, kBarCells) + " " + FormatAmount(kGpu, gpus_allocated) + "/" +
                         FormatAmount(kGpu, gpus)
                   : "-",
          std::to_string(usage.running_ranks())};
}

bool ReportsGpus(const NodeInfo& node) { return node.usage().gpus_size() > 0; }

// Each GPU's use as its agent last read it: "0:87% 1:3% 2:FAULT" (out of
// the offer for a fault), "3:?" (not read).
std::string GpuUseText(const NodeInfo& node) {
  if (!ReportsGpus(node)) return "-";
  std::string out;
  for (const GpuStatus& gpu : node.usage().gpus()) {
    if (!out.empty()) out += ' ';
    out += !gpu.fault().empty()  ? fmt::format("{}:FAULT", gpu.index())
           : !gpu.usage_known()  ? fmt::format("{}:?", gpu.index())
                                 : fmt::format("{}:{:.0f}%", gpu.index(), gpu.utilization() * 100);
  }
  return out;
}

// "#12 accuracy=0.91 loss=0.314": the report's index, then its values by name.
std::string MetricsText(const std::optional<MetricRecord>& record) {
  if (!record) return "-";
  std::vector<std::pair<std::string, double>> values(record->values().begin(), record->values().end());
  std::sort(values.begin(), values.end());
  std::string out = fmt::format("#{}", record->index());
  for (const auto& [name, value] : values) out += fmt::format(" {}={:.4g}", Shown(name), value);
  return out;
}

std::vector<std::string> JobCells(const TopJob& job, int64_t now_unix_ms) {
  return {Shown(job.info.job_id()),
          Shown(job.info.spec().name()),
          JobStateText(job.info.state()),
          std::to_string(job.info.spec().num_workers()),
          std::to_string(AttemptCount(job.info)),
          JobDuration(job.info, now_unix_ms),
          MetricsText(job.latest)};
}

int64_t NodeTotal(const ClusterStatus& status) {
  const NodeCounts& counts = status.node_counts();
  const int64_t counted = int64_t{counts.alive()} + counts.draining() + counts.dead();
  return std::max<int64_t>(counted, status.nodes_size());
}

std::string Plural(int64_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

// "... 25 more nodes": the rows that did not fit.
std::string MoreLine(int64_t n, const char* one, const char* many) {
  return fmt::format("... {} more {}", n, n == 1 ? one : many);
}

std::string TitleLine(const TopSnapshot& snapshot) {
  const ClusterStatus& status = snapshot.status;
  const std::time_t seconds = static_cast<std::time_t>(snapshot.now_unix_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("clusterd top - {} UTC - head {} - {} ({} alive, {} draining, {} dead) - {} - in use {}",
                     fmt::format("{:02}:{:02}:{:02}", utc.tm_hour, utc.tm_min, utc.tm_sec),
                     Shown(status.head_address(), 64), Plural(NodeTotal(status), "node", "nodes"),
                     status.node_counts().alive(), status.node_counts().draining(), status.node_counts().dead(),
                     Plural(snapshot.running_jobs, "job running", "jobs running"),
                     FormatResources(status.used()).empty() ? "nothing" : FormatResources(status.used()));
}

}  // namespace

std::string UsageBar(double used, double total, int cells) {
  double fraction = total > 0 && used > 0 ? used / total : 0;
  fraction = std::min(fraction, 1.0);
  const int filled = static_cast<int>(std::lround(fraction * cells));
  return "[" + std::string(filled, '|') + std::string(cells - filled, ' ') + "]";
}

std::vector<std::string> RenderTopFrame(const TopSnapshot& snapshot, TopSize size) {
  const int64_t nodes_total = NodeTotal(snapshot.status);
  const int nodes_listed = snapshot.status.nodes_size();
  const int jobs_listed = static_cast<int>(snapshot.jobs.size());
  const int64_t nodes_unlisted = nodes_total - nodes_listed;
  const int64_t jobs_unlisted = std::max(0, snapshot.running_jobs - jobs_listed);
  const int node_lines_wanted = nodes_listed + (nodes_unlisted > 0 ? 1 : 0);
  const int job_lines_wanted = std::max(1, jobs_listed + (jobs_unlisted > 0 ? 1 : 0));

  // Room for rows: the nodes get what the jobs leave, and half at least.
  int node_room = node_lines_wanted, job_room = job_lines_wanted;
  if (size.height > 0) {
    const int room = std::max(0, size.height - kFixedLines);
    if (node_room + job_room > room) {
      node_room = std::min(node_lines_wanted, std::max(room - job_lines_wanted, room / 2));
      job_room = room - node_room;
    }
  }

  std::vector<std::string> lines = {TitleLine(snapshot), ""};

  // Cut: the last row that fits says how many are not shown.
  const bool nodes_cut = node_room < node_lines_wanted || nodes_unlisted > 0;
  const int node_rows_shown = nodes_cut ? std::max(0, node_room - 1) : nodes_listed;
  const auto& nodes = snapshot.status.nodes();
  // The GPUs' own use gets a column where a node shown reports it.
  const bool gpu_use = std::any_of(nodes.begin(), nodes.begin() + node_rows_shown, ReportsGpus);
  std::vector<std::vector<std::string>> node_rows = {{"NODE", "STATE", "CPU LOAD", "MEMORY", "GPUS", "RANKS"}};
  if (gpu_use) node_rows[0].insert(node_rows[0].begin() + 5, "GPU USE");
  for (int i = 0; i < node_rows_shown; ++i) {
    node_rows.push_back(NodeCells(nodes[i]));
    if (gpu_use) node_rows.back().insert(node_rows.back().begin() + 5, GpuUseText(nodes[i]));
  }
  for (const auto& line : Columns(node_rows)) lines.push_back(line);
  if (nodes_cut && node_room > 0) lines.push_back(MoreLine(nodes_total - node_rows_shown, "node", "nodes"));

  lines.push_back("");
  if (snapshot.running_jobs == 0 && jobs_listed == 0) {
    lines.push_back("JOBS");
    if (job_room > 0) lines.push_back("(no running jobs)");
  } else {
    std::vector<std::vector<std::string>> job_rows = {
        {"JOB", "NAME", "STATE", "WORKERS", "ATTEMPTS", "RUNNING", "LATEST METRICS"}};
    const int job_total = std::max(snapshot.running_jobs, jobs_listed);
    const bool jobs_cut = job_room < job_lines_wanted || jobs_unlisted > 0;
    const int job_rows_shown = jobs_cut ? std::max(0, job_room - 1) : jobs_listed;
    for (int i = 0; i < job_rows_shown; ++i) job_rows.push_back(JobCells(snapshot.jobs[i], snapshot.now_unix_ms));
    for (const auto& line : Columns(job_rows)) lines.push_back(line);
    if (jobs_cut && job_room > 0) lines.push_back(MoreLine(job_total - job_rows_shown, "job", "jobs"));
  }

  if (size.height > 0 && lines.size() > static_cast<size_t>(size.height)) lines.resize(size.height);
  if (size.width > 0) {
    for (auto& line : lines) line = CutToChars(line, static_cast<size_t>(size.width));
  }
  return lines;
}

}  // namespace clusterd::cli
