#include "cli/queue_commands.h"

#include <cmath>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "cli/colour.h"
#include "cli/command_line.h"
#include "cli/job_printer.h"
#include "common/proto_json.h"
#include "common/resources.h"

namespace po = boost::program_options;

namespace clusterd::cli {

namespace {

std::string Number(double value) { return fmt::format("{:g}", value); }

// "in 1m40s", "now", or "unknown" (a job it waits for has no time limit).
std::string EstimatedStart(int64_t start_unix_ms, int64_t now_unix_ms) {
  if (start_unix_ms <= 0) return "unknown";
  if (start_unix_ms <= now_unix_ms) return "now";
  return "in " + FormatDuration(start_unix_ms - now_unix_ms);
}

std::string UsedOf(const QuotaInfo& quota, const std::string& resource) {
  auto limit = quota.limit().amounts().find(resource);
  if (limit == quota.limit().amounts().end()) return "-";
  return fmt::format("{} of {}", Number(Amount(quota.used(), resource)), Number(limit->second));
}

int QuotaSet(CommandLine& line, bool remove) {
  SetQuotaRequest request;
  request.set_name(line.positional[1]);
  request.set_remove(remove);
  if (!remove) {
    const std::vector<std::string> words(line.positional.begin() + 2, line.positional.end());
    if (words.empty()) return Fail(Status::InvalidArgument("quota set NAME: give the limits, as GPU=8 CPU=64"));
    auto limits = ParseQuotaLimits(words);
    if (!limits.ok()) return Fail(limits.status());
    *request.mutable_limit() = *limits;
  } else if (line.positional.size() > 2) {
    return Fail(Status::InvalidArgument("quota remove NAME takes no limits"));
  }
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  QuotaInfo reply;
  Status st = (*client)->Call(&HeadService::Stub::QueueSetQuota, request, &reply);
  if (!st.ok()) return Fail(st);
  if (line.json) {
    std::cout << ToJson(reply) << "\n";
  } else if (remove) {
    std::cout << "Quota of " << request.name() << " removed.\n";
  } else {
    std::string limits;
    for (const auto& [resource, amount] : reply.limit().amounts()) {
      limits += fmt::format("{}{}={}", limits.empty() ? "" : " ", resource, Number(amount));
    }
    std::cout << "Quota of " << reply.name() << ": " << limits << ".\n";
  }
  return 0;
}

}  // namespace

Result<ResourceSet> ParseQuotaLimits(const std::vector<std::string>& words) {
  ResourceSet limits;
  for (const std::string& word : words) {
    const size_t eq = word.find('=');
    const std::string resource = eq == std::string::npos ? "" : word.substr(0, eq);
    const std::string number = eq == std::string::npos ? "" : word.substr(eq + 1);
    char* end = nullptr;
    const double amount = number.empty() ? -1 : std::strtod(number.c_str(), &end);
    if (resource.empty() || number.empty() || *end != '\0' || !std::isfinite(amount) || amount < 0) {
      return Status::InvalidArgument(
          fmt::format("quota: '{}' is not RESOURCE=AMOUNT (as GPU=8 or CPU=64, an amount >= 0)", word));
    }
    (*limits.mutable_amounts())[resource] = amount;
  }
  return limits;
}

std::string FormatQueueTable(const QueueListReply& queue, int64_t now_unix_ms) {
  if (queue.jobs().empty()) return "No jobs wait.\n";
  std::vector<std::vector<std::string>> rows = {
      {"JOB", "NAME", "OWNER", "PRIORITY", "WORKERS", "GPUS", "CPUS", "STARTS", "REASON"}};
  for (const QueuedJob& job : queue.jobs()) {
    rows.push_back({job.job_id(), Truncate(job.name(), 24), job.owner().empty() ? "-" : job.owner(),
                    std::to_string(job.priority()) + (job.borrow() ? " (borrow)" : ""),
                    std::to_string(job.num_workers()), Number(job.gpus()), Number(job.cpus()),
                    EstimatedStart(job.estimated_start_unix_ms(), now_unix_ms), Truncate(job.reason(), 160)});
  }
  std::string table = FormatTable(rows);
  if (queue.total() > queue.jobs_size()) {
    table += fmt::format("({} of {} waiting jobs; --limit 0 lists up to 1000)\n", queue.jobs_size(), queue.total());
  }
  return table;
}

std::string FormatQuotaTable(const ListQuotasReply& quotas) {
  if (quotas.quotas().empty()) return "No quotas are set.\n";
  std::vector<std::vector<std::string>> rows = {{"NAME", "GPUS", "CPUS", "OTHER"}};
  for (const QuotaInfo& quota : quotas.quotas()) {
    std::string other;
    for (const auto& [resource, amount] : quota.limit().amounts()) {
      if (resource == kGpu || resource == kCpu) continue;
      other += fmt::format("{}{} {}", other.empty() ? "" : ", ", resource, UsedOf(quota, resource));
    }
    rows.push_back({quota.name(), UsedOf(quota, kGpu), UsedOf(quota, kCpu), other.empty() ? "-" : other});
  }
  return FormatTable(rows);
}

int QueueCommand(const std::vector<std::string>& args) {
  CommandLine line;
  int limit = 0;
  po::options_description flags = JsonFlag(&line);
  flags.add_options()("limit", po::value(&limit), "list at most this many jobs (default and at most 1000)");
  int code = ParseCommandLine("queue", "queue [--limit N] [--json]", args, flags, 0, 0, &line);
  if (code >= 0) return code;
  if (limit < 0) return Fail(Status::InvalidArgument("--limit must not be negative"));
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  QueueListRequest request;
  request.set_limit(limit);
  QueueListReply reply;
  Status st = (*client)->Call(&HeadService::Stub::QueueList, request, &reply);
  if (!st.ok()) return Fail(st);
  std::cout << (line.json ? ToJson(reply) + "\n" : ForStdout(FormatQueueTable(reply, (*client)->HeadNowUnixMs())));
  return 0;
}

int QuotaCommand(const std::vector<std::string>& args) {
  CommandLine line;
  int code = ParseCommandLine("quota", "quota set NAME RESOURCE=AMOUNT... | quota remove NAME | quota list [--json]",
                              args, JsonFlag(&line), 1, 64, &line);
  if (code >= 0) return code;
  const std::string& verb = line.positional[0];
  if (verb == "list") {
    if (line.positional.size() != 1) return Fail(Status::InvalidArgument("quota list takes no arguments"));
    auto client = HeadClient::Connect(line.client);
    if (!client.ok()) return Fail(client.status());
    ListQuotasReply reply;
    Status st = (*client)->Call(&HeadService::Stub::QueueListQuotas, ListQuotasRequest(), &reply);
    if (!st.ok()) return Fail(st);
    std::cout << (line.json ? ToJson(reply) + "\n" : ForStdout(FormatQuotaTable(reply)));
    return 0;
  }
  if (verb == "set" || verb == "remove") {
    if (line.positional.size() < 2) return Fail(Status::InvalidArgument("quota " + verb + ": name a user or a group"));
    return QuotaSet(line, verb == "remove");
  }
  return Fail(Status::InvalidArgument(
      fmt::format("quota: unknown action '{}': set NAME RESOURCE=AMOUNT..., remove NAME or list", verb)));
}

}  // namespace clusterd::cli
