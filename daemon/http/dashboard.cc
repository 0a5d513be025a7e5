#include "daemon/head/identity/access_rules.h"
#include "daemon/head/identity/ownership_check.h"
#include "daemon/head/identity/shown_to.h"
#include "daemon/http/dashboard.h"

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/net/auth.h"
#include "common/proto_json.h"
#include "common/text.h"
#include "daemon/http/dashboard_page.h"
#include "daemon/http/http_query.h"
#include "daemon/http/json_reply.h"
#include "common/logging.h"
#include "daemon/head/shown_records.h"
#include "daemon/http/prometheus.h"

namespace clusterd {

namespace {

constexpr char kCookie[] = "clusterd_token";
// A log tail the page starts from, and what one poll of a log brings at most.
constexpr int64_t kTailBytes = 16 << 10;
constexpr int64_t kLogPollBytes = 64 << 10;
// Jobs looked at for one filtered page of /api/jobs: the loop is not held
// for long whatever the filter; the page says where to go on.
constexpr int kJobsScanned = 5000;
// The sweeps page lists the newest sweeps, each with its trials.
// These are fixed: they bound what one page or poll shows and costs, not
// what the head keeps.
constexpr int kSweepsShown = 100;

bool IsPage(const std::string& path) {
  return path == "/" || path == "/index.html" || path == "/node" || path == "/jobs" || path == "/job" ||
         path == "/store" || path == "/sweeps" || path == "/sweep";
}

bool IsReadOnLoop(const std::string& path) {
  return path == "/api/status" || path == "/api/jobs" || path == "/api/job" || path == "/api/logs" ||
         path == "/api/metrics" || path == "/api/store" || path == "/api/sweeps" || path == "/api/sweep" ||
         path == "/metrics" || UsageApi::IsPath(path);
}

HttpReply FromStatus(const Status& status) { return JsonErrorOf(status); }

// Whether `method` is one of `allowed` ("GET, HEAD, POST").
bool Allows(const std::string& allowed, const std::string& method) {
  for (size_t at = 0; at < allowed.size();) {
    size_t end = allowed.find(',', at);
    if (end == std::string::npos) end = allowed.size();
    size_t start = allowed.find_first_not_of(' ', at);
    if (start < end && allowed.compare(start, end - start, method) == 0) return true;
    at = end + 1;
  }
  return false;
}

// A whole number from the query; nullopt when absent, an error when not a number.
Result<std::optional<int64_t>> IntParam(const std::string& target, const std::string& name) {
  auto text = QueryParam(target, name);
  if (!text) return std::optional<int64_t>();
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || errno == ERANGE) {
    return Status::InvalidArgument(fmt::format("{}={} is not a whole number", name, *text));
  }
  return std::optional<int64_t>(value);
}

// Pages must not be framed, nor load anything from elsewhere: their script
// and style are this origin's /assets/, their data comes from this origin.
// No inline script runs. Style attributes may: the store page's bar sets its
// width with one, and the refusal page styles its body.
HttpReply HtmlPage(int status, std::string body) {
  HttpReply reply{status, "text/html; charset=utf-8", std::move(body)};
  reply.headers = {{"Content-Security-Policy",
                    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; "
                    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
                   {"Referrer-Policy", "no-referrer"},
                   {"X-Content-Type-Options", "nosniff"}};
  return reply;
}

// The dashboard's style or script. Like every reply of the server it goes
// with Cache-Control: no-store (http_server.cc), which fits: its path stays
// the same from one clusterd to the next, so a browser must not keep an old
// script for a new head, and the files are small and come from the head.
HttpReply Asset(const std::string& path) {
  const DashboardAsset* asset = FindDashboardAsset(path);
  if (!asset) return JsonError(404, "no such asset: " + path);
  HttpReply reply{200, std::string(asset->content_type), std::string(asset->bytes)};
  reply.headers = {{"X-Content-Type-Options", "nosniff"}};
  return reply;
}

HttpReply Refusal(const std::string& why) {
  return HtmlPage(401, fmt::format(R"HTML(<!doctype html>
<html><head><meta charset="utf-8"><title>clusterd: token needed</title></head>
<body style="font-family:sans-serif;margin:2em"><h1>Token needed</h1>
<p id="refused">{}. This dashboard shows a cluster only to holders of its token: open the address
<code>clusterd start --head</code> printed (ending in <code>?token=...</code>), or read the token from the head's
session folder (<code>session_latest/token</code>).</p></body></html>
)HTML", why));
}

}  // namespace

Dashboard::Dashboard(EventLoop* loop, HeadCore* core, const std::string& token, Sources sources,
                     HttpServer::Limits limits)
    : Dashboard(loop, core, static_cast<const UserRegistry*>(nullptr), sources, limits) {
  own_users_ = UserRegistry::AdminOnly(token);
  users_ = own_users_.get();
}

Dashboard::Dashboard(EventLoop* loop, HeadCore* core, const UserRegistry* users, Sources sources,
                     HttpServer::Limits limits)
    : loop_(loop),
      core_(core),
      users_(users),
      sources_(sources),
      job_api_(core),
      usage_api_(core),
      packages_(sources.blobs),
      server_([this](const HttpRequest& request, HttpServer::Respond respond) { Handle(request, std::move(respond)); },
              limits, [this](const HttpRequest& request) { return Stream(request); }) {}

Dashboard::~Dashboard() { Stop(); }

Status Dashboard::Start(const std::string& ip, int port) { return server_.Start(ip, port); }

void Dashboard::Stop() { server_.Stop(); }

HttpReply Dashboard::Page(const HttpRequest& request) const {
  if (auto given = QueryParam(request.target, "token")) {
    auto caller = users_->Resolve(*given);
    if (!caller.ok()) return Refusal("The token in this address is wrong");
    if (caller->IsNode()) return Refusal("The token in this address is a node's, which may only register a node");
    // The token goes into a cookie the page's script cannot read, sent back
    // to this origin only, and the address loses it.
    HttpReply moved{303, "text/plain; charset=utf-8", "The token is now a cookie.\n"};
    moved.headers = {{"Set-Cookie", fmt::format("{}={}; HttpOnly; SameSite=Strict; Path=/", kCookie, *given)},
                     {"Location", WithoutParam(request.target, "token")},
                     {"Referrer-Policy", "no-referrer"}};
    return moved;
  }
  std::string cookie = CookieValue(request.cookie, kCookie);
  if (cookie.empty()) return Refusal("This browser has no token for this cluster");
  auto caller = users_->Resolve(cookie);
  if (!caller.ok() || caller->IsNode()) return Refusal("This browser's token for this cluster is wrong");
  return HtmlPage(200, std::string(DashboardDocument()));
}

std::optional<HttpReply> Dashboard::Refused(const HttpRequest& request, Principal* caller) const {
  const std::string path = TargetPath(request.target);
  // HEAD comes here as GET (http_server.h); a 405 names what is allowed.
  const std::string allowed = JobApi::AllowedMethods(path);
  if (!Allows(allowed, request.method)) {
    HttpReply refused = JsonError(405, fmt::format("{} is not taken on {}: only {}", request.method, path, allowed));
    refused.headers = {{"Allow", allowed}};
    return refused;
  }
  const bool write = request.method != "GET";
  if (!write && IsPage(path)) return std::nullopt;  // Page() checks its own way
  // The style and script are the same for everyone and hold no cluster
  // data: they need no token.
  if (!write && IsDashboardAssetPath(path)) return std::nullopt;
  // API clients send the bearer header (or ?token=); the pages' own
  // fetches send the cookie. Writes: the header only (dashboard.h).
  const std::string& authorization = request.authorization;
  std::string given;
  // The scheme's name is case-insensitive (RFC 7235): `bearer` is taken too.
  if (authorization.size() > 7 && strncasecmp(authorization.c_str(), "Bearer ", 7) == 0) {
    given = authorization.substr(7);
  } else if (write) {
    return JsonError(401, fmt::format("missing cluster token: a {} carries it in an Authorization: Bearer TOKEN "
                                      "header (a cookie or ?token= is taken for GET only)",
                                      request.method));
  } else if (auto cookie = CookieValue(request.cookie, kCookie); !cookie.empty()) {
    given = cookie;
  } else {
    given = QueryParam(request.target, "token").value_or("");
  }
  if (given.empty()) return JsonError(401, "missing cluster token (Authorization: Bearer TOKEN or ?token=)");
  auto resolved = users_->Resolve(given);
  if (!resolved.ok()) return JsonError(401, resolved.status().message());
  Status user = RequireUser(*resolved);
  if (!user.ok()) return JsonErrorOf(user);
  *caller = std::move(*resolved);
  return std::nullopt;
}

std::optional<HttpReply> Dashboard::AnswerAtOnce(const HttpRequest& request) const {
  Principal caller;
  return AnswerAtOnce(request, &caller);
}

std::optional<HttpReply> Dashboard::AnswerAtOnce(const HttpRequest& request, Principal* caller) const {
  if (auto refused = Refused(request, caller)) return refused;
  const std::string path = TargetPath(request.target);
  if (request.method == "GET") {
    if (IsPage(path)) return Page(request);
    if (IsDashboardAssetPath(path)) return Asset(path);
    if (PackageUploads::IsPath(path)) return packages_.Stat(path);
    if (IsReadOnLoop(path)) return std::nullopt;
    return JsonError(404, "no such page: " + path);
  }
  // A PUT with a body streams (Stream); this one came without.
  if (request.method == "PUT") return JsonError(411, "a package upload needs its bytes, with a Content-Length");
  return std::nullopt;  // a write of job_api.h, on the loop
}

HttpStream Dashboard::Stream(const HttpRequest& request) {
  // Refused before a byte of the body is read.
  Principal caller;
  if (auto refused = Refused(request, &caller)) return {nullptr, std::move(refused)};
  if (request.method == "PUT") return packages_.Start(request);
  return {};
}

HttpReply Dashboard::Read(const std::string& target, const Principal& caller) const {
  const std::string path = TargetPath(target);
  JobManager& jobs = core_->jobs();
  if (path == "/api/status") return {200, "application/json", ToJson(core_->GetStatus())};
  if (UsageApi::IsPath(path)) return usage_api_.Answer(target);
  if (path == "/api/jobs") {
    // One page of the jobs in a state: pages of the job manager, filtered,
    // until a page is full or kJobsScanned jobs were looked at.
    std::optional<JobState> state;
    if (auto name = QueryParam(target, "state"); name && !name->empty()) {
      JobState parsed;
      if (!JobState_Parse(*name, &parsed) || parsed == JOB_STATE_UNSPECIFIED) {
        return JsonError(400, fmt::format("state={} is not a job state (PENDING, RUNNING, ...)", *name));
      }
      state = parsed;
    }
    ListJobsRequest request;
    request.set_page_token(QueryParam(target, "page_token").value_or(""));
    ListJobsReply reply;
    for (int scanned = 0; scanned < kJobsScanned;) {
      auto page = jobs.ListPage(request);
      if (!page.ok()) return FromStatus(page.status());
      for (auto& job : *page->mutable_jobs()) {
        if (!state || job.state() == *state) *reply.add_jobs() = std::move(job);
      }
      scanned += page->jobs_size();
      reply.set_next_page_token(page->next_page_token());
      if (page->next_page_token().empty() || reply.jobs_size() >= JobManager::kJobsPage) break;
      request.set_page_token(page->next_page_token());
    }
    HidePassthroughValues(&reply);
    HideOthersData(caller, &reply);
    return {200, "application/json", ToJson(reply)};
  }
  if (path == "/metrics") {
    // The cluster's state for everyone; each job's reported values only
    // to its owner and admins, as GetMetrics gives them.
    std::vector<std::pair<std::string, MetricRecord>> latest = jobs.LatestMetrics();
    if (!caller.IsAdmin()) {
      latest.erase(std::remove_if(latest.begin(), latest.end(),
                                  [&](const auto& job) {
                                    const JobInfo* info = jobs.InfoOf(job.first);
                                    return !info || OwnerOf(*info) != caller.user;
                                  }),
                   latest.end());
    }
    return {200, "text/plain; version=0.0.4", FormatPrometheus(core_->GetStatus(), jobs.Tally(), latest)};
  }
  if (path == "/api/store") {
    if (!sources_.blobs) return JsonError(404, "this head has no store");
    BlobStore::Usage usage = sources_.blobs->usage();
    return JsonReply(200, {{"used_bytes", usage.used_bytes},
                           {"pinned_bytes", usage.pinned_bytes},
                           {"capacity_bytes", usage.capacity_bytes},
                           {"blobs", usage.blobs}});
  }
  if (path == "/api/sweeps") {
    // The newest sweeps first, kSweepsShown of them.
    std::vector<SweepInfo> all = core_->sweeps().List();
    ListSweepsReply reply;
    for (auto it = all.rbegin(); it != all.rend() && reply.sweeps_size() < kSweepsShown; ++it) {
      *reply.add_sweeps() = std::move(*it);
    }
    HidePassthroughValues(&reply);
    HideOthersData(caller, &reply);
    return {200, "application/json", ToJson(reply)};
  }
  // The rest are about one sweep or one job.
  auto id = QueryParam(target, "id");
  if (path == "/api/sweep") {
    if (!id || id->empty()) return JsonError(400, "which sweep? (?id=SWEEP)");
    auto sweep = core_->sweeps().Get(*id);
    if (!sweep.ok()) return FromStatus(sweep.status());
    HidePassthroughValues(&*sweep);
    HideOthersData(caller, &*sweep);
    return {200, "application/json", ToJson(*sweep)};
  }
  if (!id || id->empty()) return JsonError(400, "which job? (?id=JOB or a submission_id)");
  auto job = FindJob(jobs, *id);
  if (!job.ok()) return FromStatus(job.status());
  const std::string job_id = job->job_id();
  if (path == "/api/job") {
    HidePassthroughValues(&*job);
    HideOthersData(caller, &*job);
    return {200, "application/json", ToJson(*job)};
  }
  if (path == "/api/metrics") {
    Status allowed = CheckOwnership(*core_, caller, job_id, false, OwnedAction::kReadMetrics);
    if (!allowed.ok()) return JsonErrorOf(allowed);
    JobRequest request;
    request.set_job_id(job_id);
    request.set_page_token(QueryParam(target, "page_token").value_or(""));
    auto reply = jobs.Metrics(request);
    return reply.ok() ? HttpReply{200, "application/json", ToJson(*reply)} : FromStatus(reply.status());
  }
  // /api/logs: one rank, from an offset (the page's previous end), or its tail.
  Status allowed = CheckOwnership(*core_, caller, job_id, false, OwnedAction::kReadLogs);
  if (!allowed.ok()) return JsonErrorOf(allowed);
  auto rank = IntParam(target, "rank");
  if (!rank.ok()) return FromStatus(rank.status());
  if (!*rank || **rank < 0 || **rank >= job->spec().num_workers()) {
    return JsonError(400, fmt::format("which rank? (&rank=0..{})", job->spec().num_workers() - 1));
  }
  auto offset = IntParam(target, "offset");
  if (!offset.ok()) return FromStatus(offset.status());
  LogsRequest request;
  request.set_job_id(job_id);
  request.set_rank(static_cast<int32_t>(**rank));
  request.set_attempt(-1);
  request.set_max_bytes(kLogPollBytes);
  int64_t from = 0;
  if (*offset) {
    from = **offset;
  } else if (sources_.logs) {
    from = std::max<int64_t>(0, sources_.logs->Size(job_id, static_cast<int>(**rank)) - kTailBytes);
  }
  (*request.mutable_offsets())[request.rank()] = from;
  auto reply = jobs.Logs(request);
  return reply.ok() ? HttpReply{200, "application/json", ToJson(*reply)} : FromStatus(reply.status());
}

void Dashboard::Handle(const HttpRequest& request, HttpServer::Respond respond) {
  Principal caller;
  if (auto now = AnswerAtOnce(request, &caller)) return respond(std::move(*now));
  // A log not read back yet is not waited for (the page asks again within
  // seconds): the answer says so, and its job's logs are read back first.
  if (sources_.logs_ready && request.method == "GET" && TargetPath(request.target) == "/api/logs") {
    Status ready = sources_.logs_ready(QueryParam(request.target, "id").value_or(""));
    if (!ready.ok()) return respond(JsonErrorOf(ready));
  }
  // The server's thread goes on serving others while the loop answers. An
  // exception from the core fails this request alone, never the loop.
  loop_->Post([this, request, caller = std::move(caller), respond = std::move(respond)] {
    try {
      respond(request.method == "GET" ? Read(request.target, caller) : job_api_.Answer(request, caller));
    } catch (const std::exception& e) {
      LOG_ERROR("dashboard: {} {} failed: {}", request.method, TargetPath(request.target), e.what());
      respond(JsonError(500, fmt::format("the head failed to answer: {}", e.what())));
    }
  });
}

}  // namespace clusterd
