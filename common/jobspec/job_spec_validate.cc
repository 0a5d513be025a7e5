// ValidateJobSpec and the per-field checks it shares with the parser.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "common/jobspec/env_match.h"
#include "common/jobspec/job_spec.h"
#include "common/jobspec/search_space.h"
#include "common/jobspec/job_spec_checks.h"
#include "common/resources.h"
#include "common/storage/s3_config.h"
#include "common/text.h"

namespace clusterd {
namespace job_spec_internal {

namespace {

Status Invalid(std::string message) { return Status::InvalidArgument(std::move(message)); }

bool IsBlank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

bool IsResourceNameChar(unsigned char c) { return std::isalnum(c) || std::strchr("_-.:/", c) != nullptr; }

// The built-in name that `name` is a misspelling of ("cpu", "GPUs",
// "num_gpus", "mem"), or "". Not edit distance: TPU and HPU are real
// custom resources one letter away from CPU and GPU.
std::string BuiltinMisspelled(const std::string& name) {
  std::string s;
  for (char c : name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.rfind("num_", 0) == 0) s.erase(0, 4);
  if (!s.empty() && s.back() == 's') s.pop_back();
  if (s == "cpu") return kCpu;
  if (s == "gpu") return kGpu;
  if (s == "memory" || s == "mem") return kMemory;
  return "";
}

}  // namespace

Status CheckText(const std::string& text) {
  if (text.find('\0') != std::string::npos) return Invalid("contains a NUL character");
  return Status::Ok();
}

Status CheckName(const std::string& name) {
  if (name.empty()) return Invalid("must not be empty");
  if (name.size() > kMaxNameLength) {
    return Invalid(fmt::format("is {} bytes long (UTF-8), more than the {} a name may be", name.size(),
                               kMaxNameLength));
  }
  // The name shows up in tables, log lines and file names.
  if (name.find('/') != std::string::npos || HasTerminalControls(name)) {
    return Invalid(fmt::format("may not contain '/' or control characters, got {}", JsonQuote(name)));
  }
  return Status::Ok();
}

Status CheckEntrypoint(const google::protobuf::RepeatedPtrField<std::string>& argv) {
  const bool blank_shell = argv.size() == 3 && argv[0] == "/bin/sh" && argv[1] == "-c" && IsBlank(argv[2]);
  if (argv.empty() || blank_shell) return Invalid("is empty; give a shell command or a list of arguments");
  if (argv[0].empty()) return Invalid("the program (the first argument) is empty");
  for (const auto& arg : argv) RETURN_IF_ERROR(CheckText(arg));
  return Status::Ok();
}

Status CheckNumWorkers(int64_t num_workers, int max_num_workers) {
  if (num_workers < 1 || num_workers > max_num_workers) {
    return Invalid(fmt::format("expected an integer between 1 and {}, got {}", max_num_workers, num_workers));
  }
  return Status::Ok();
}

Status CheckResourceName(const std::string& name) {
  if (name.empty() || !std::all_of(name.begin(), name.end(), IsResourceNameChar)) {
    return Invalid(fmt::format("a resource name is letters, digits and '_-.:/', got '{}'", name));
  }
  if (name == kCpu || name == kGpu || name == kMemory) return Status::Ok();
  // "cpu", "Memory", "gpus": a custom resource no node offers, so the job
  // would wait forever; say so now instead.
  std::string hint = BuiltinMisspelled(name);
  if (!hint.empty()) {
    return Invalid(fmt::format("unknown resource '{}' (did you mean '{}'? resource names are case-sensitive)",
                               name, hint));
  }
  return Status::Ok();
}

Status CheckResourceAmount(const std::string& name, double amount) {
  if (!std::isfinite(amount) || amount < 0) return Invalid(fmt::format("expected a number >= 0, got {}", amount));
  // As in Ray: a fraction of one GPU can be shared, but 1.5 GPUs cannot.
  if (name == kGpu && amount > 1 && amount != std::floor(amount)) {
    return Invalid(fmt::format("a GPU count above 1 must be a whole number, got {}", amount));
  }
  return Status::Ok();
}

Status CheckEnvName(const std::string& name) {
  bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
               std::all_of(name.begin(), name.end(),
                           [](unsigned char c) { return std::isalnum(c) || c == '_'; });
  if (!valid) {
    return Invalid(fmt::format(
        "'{}' is not a variable name (letters, digits and '_', not starting with a digit)", name));
  }
  if (IsReservedWorkerVariable(name)) {
    return Invalid(fmt::format("{} is set by clusterd for each worker and cannot be set here", name));
  }
  return Status::Ok();
}

Status CheckPassthroughPattern(const std::string& pattern) {
  if (pattern.empty()) return Invalid("is an empty pattern; write 'DVC_*' to pass every DVC_ variable");
  return CheckText(pattern);
}

Status CheckCount(int64_t count) {
  if (count < 0) return Invalid(fmt::format("expected an integer >= 0, got {}", count));
  if (count > INT32_MAX) return Invalid(fmt::format("expected an integer up to {}, got {}", INT32_MAX, count));
  return Status::Ok();
}

Status CheckArrayCount(int64_t count) {
  if (count < 1 || count > kMaxArrayCount) {
    return Invalid(fmt::format("expected an integer between 1 and {}, got {}", kMaxArrayCount, count));
  }
  return Status::Ok();
}

Status CheckArrayMaxConcurrent(int64_t max_concurrent) {
  // More than the count limits nothing, as Slurm's --array=0-0%50 and tune.max_concurrent.
  if (max_concurrent < 0 || max_concurrent > kMaxArrayCount) {
    return Invalid(fmt::format("expected an integer between 0 (no limit) and {}, got {}", kMaxArrayCount,
                               max_concurrent));
  }
  return Status::Ok();
}

Status CheckTimeout(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) {
    return Invalid(fmt::format("expected a duration >= 0 seconds, got {}", seconds));
  }
  return Status::Ok();
}

Status CheckPreemptionGrace(double seconds) {
  constexpr double kMaxGraceS = 86400;
  if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxGraceS) {
    return Invalid(fmt::format("expected a duration from 0 to {} seconds, got {}", kMaxGraceS, seconds));
  }
  return Status::Ok();
}

Status CheckHangTimeout(double seconds) {
  constexpr double kMaxHangTimeoutS = 365.0 * 86400;
  if (!std::isfinite(seconds) || seconds < 0 || (seconds > 0 && seconds < kMinHangTimeoutS) ||
      seconds > kMaxHangTimeoutS) {
    return Invalid(fmt::format("expected 0 (no hang detection) or a duration from {} to {} seconds, got {}",
                               kMinHangTimeoutS, kMaxHangTimeoutS, seconds));
  }
  return Status::Ok();
}

Status CheckMaxPreemptions(int64_t count) {
  constexpr int64_t kMax = 1000000;
  if (count < 0 || count > kMax) return Invalid(fmt::format("expected an integer from 0 to {}, got {}", kMax, count));
  return Status::Ok();
}

Status CheckPriority(int64_t priority) {
  constexpr int64_t kLimit = 1000000;
  if (priority < -kLimit || priority > kLimit) {
    return Invalid(fmt::format("expected an integer from {} to {}, got {}", -kLimit, kLimit, priority));
  }
  return Status::Ok();
}

Status CheckPriorityClass(const std::string& name) {
  constexpr size_t kMaxBytes = 64;
  bool ok = !name.empty() && name.size() <= kMaxBytes;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) ok = false;
  }
  if (!ok) {
    return Invalid(fmt::format("expected an integer, or a priority class's name (letters, digits, '_', '-', '.'; "
                               "at most {} bytes), got '{}'", kMaxBytes, name));
  }
  return Status::Ok();
}

Status CheckConfigJson(const std::string& json) {
  if (json.empty()) return Status::Ok();
  if (json.size() > kMaxConfigJsonBytes) {
    return Invalid(fmt::format("is {} bytes of JSON, more than the {} allowed", json.size(), kMaxConfigJsonBytes));
  }
  google::protobuf::Struct parsed;
  if (!google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) return Invalid("is not a JSON object");
  return Status::Ok();
}

Status CheckExclude(const std::string& pattern) {
  if (pattern.empty() || IsBlank(pattern)) return Invalid("is an empty pattern; write e.g. 'data/' or '*.ckpt'");
  return CheckText(pattern);
}

Status CheckPackageCap(int64_t bytes) {
  if (bytes <= 0) return Invalid(fmt::format("expected a size above 0, like 4Gi, got {}", bytes));
  return Status::Ok();
}

Status CheckLogLimit(int64_t bytes) {
  if (bytes < kMinLogLimitBytes) {
    return Invalid(fmt::format("expected a size of at least 64Ki (a rank's output kept per attempt), like 256Mi, got {}",
                               bytes));
  }
  return Status::Ok();
}

Status CheckCheckpointStorage(const std::string& storage) {
  if (storage.empty() || storage == "store" || storage == "shared") return Status::Ok();
  if (IsS3Location(storage)) return CheckOutputsStorage(storage);
  return Invalid(fmt::format(
      "expected store (the cluster's store, the default), shared or s3://BUCKET/PREFIX, got '{}'", storage));
}

Status CheckUploadRate(double bytes_per_s) {
  if (bytes_per_s == 0 || (bytes_per_s >= kMinCheckpointUploadRate && bytes_per_s <= kMaxCheckpointUploadRate)) {
    return Status::Ok();
  }
  return Invalid(fmt::format("expected 0 or unlimited (no limit), or a rate from 1MiB/s to 1TiB/s, got {} bytes/s",
                             bytes_per_s));
}

Status CheckOutputsStorage(const std::string& storage) {
  if (storage.empty()) return Status::Ok();
  auto location = ParseS3Location(storage);
  return location.ok() ? Status::Ok() : Invalid(location.status().message());
}

Status CheckRunAs(const std::string& user) {
  if (user.empty()) return Status::Ok();
  constexpr size_t kMaxUserName = 32;  // useradd's limit on Linux
  const bool plain = std::all_of(user.begin(), user.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
  if (!plain || user[0] == '-' || user.size() > kMaxUserName) {
    return Invalid(fmt::format("expected a user name of this node (up to {} letters, digits, '_', '-' or '.', not "
                               "starting with '-'), got {}", kMaxUserName, JsonQuote(user)));
  }
  return Status::Ok();
}

Status CheckRestartDelay(const RestartDelay& delay) {
  constexpr double kMaxDelayS = 7 * 86400;
  auto check = [](const char* name, double seconds) -> Status {
    if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxDelayS) {
      return Invalid(fmt::format("{} must be a duration between 0 and 7 days, got {}s", name, seconds));
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(check("initial", delay.initial_s()));
  RETURN_IF_ERROR(check("max", delay.max_s()));
  if (delay.max_s() < delay.initial_s()) {
    return Invalid(fmt::format("max ({}s) is less than initial ({}s)", delay.max_s(), delay.initial_s()));
  }
  if (!std::isfinite(delay.factor()) || delay.factor() < 1 || delay.factor() > 100) {
    return Invalid(fmt::format("factor must be a number between 1 and 100, got {}", delay.factor()));
  }
  return Status::Ok();
}

Status CheckPathUnderWorkingDir(const std::string& path, const std::string& what) {
  RETURN_IF_ERROR(CheckText(path));
  if (path.empty() || IsBlank(path)) return Invalid("is empty; name a file or folder under the working folder");
  if (path[0] == '/') return Invalid(fmt::format("'{}' is absolute; {} is a path under the working folder", path, what));
  std::string part;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') {
      part += path[i];
      continue;
    }
    if (part == "..") return Invalid(fmt::format("'{}' leaves the working folder", path));
    part.clear();
  }
  return Status::Ok();
}

Status CheckCheckpointDir(const std::string& dir) {
  if (dir.empty() || dir[0] == '/') return CheckText(dir);
  return CheckPathUnderWorkingDir(dir, "a relative checkpoint folder");
}

}  // namespace job_spec_internal

namespace {

using namespace job_spec_internal;  // NOLINT: the checks are this file's subject

// Runs one check and names the key in its error.
Status AtKey(const std::string& key, const Status& st) {
  return st.ok() ? st : Status::InvalidArgument(fmt::format("key '{}': {}", key, st.message()));
}

Status ValidateResources(const JobSpec& spec) {
  for (const auto& [name, amount] : spec.resources_per_worker().amounts()) {
    const std::string key = "resources_per_worker." + name;
    RETURN_IF_ERROR(AtKey(key, CheckResourceName(name)));
    RETURN_IF_ERROR(AtKey(key, CheckResourceAmount(name, amount)));
  }
  return Status::Ok();
}

Status ValidateEnv(const JobSpec& spec) {
  for (const auto& [name, value] : spec.env()) {
    RETURN_IF_ERROR(AtKey("env." + name, CheckEnvName(name)));
    RETURN_IF_ERROR(AtKey("env." + name, CheckText(value)));
  }
  for (int i = 0; i < spec.env_passthrough_size(); ++i) {
    RETURN_IF_ERROR(AtKey(fmt::format("env_passthrough[{}]", i), CheckPassthroughPattern(spec.env_passthrough(i))));
  }
  return Status::Ok();
}

// Linux refuses an exec whose argument or NAME=value string is 128 KiB or
// more with its NUL (MAX_ARG_STRLEN), or whose argv and environment
// together pass a quarter of the stack limit (2 MiB at the usual 8 MiB).
// A job over either would fail every launch with E2BIG, on every node:
// refuse it at submit instead. Half the total is the job's: the node adds
// its own environment and the torchrun variables.
Status CheckExecSize(const JobSpec& spec) {
  size_t total = 0;
  auto count = [&](size_t bytes, const std::string& key) {
    total += bytes + 1 + sizeof(char*);  // the NUL and the pointer to it, as the kernel counts
    if (bytes + 1 <= kMaxExecStringBytes) return Status::Ok();
    return AtKey(key, Invalid(fmt::format("is {} bytes; the kernel starts no program with an argument or "
                                          "variable of {} bytes or more",
                                          bytes, kMaxExecStringBytes)));
  };
  for (int i = 0; i < spec.entrypoint_size(); ++i) {
    RETURN_IF_ERROR(count(spec.entrypoint(i).size(), fmt::format("entrypoint[{}]", i)));
  }
  for (const auto& [name, value] : spec.env()) RETURN_IF_ERROR(count(name.size() + 1 + value.size(), "env." + name));
  if (total > kMaxExecTotalBytes) {
    return Invalid(fmt::format("the entrypoint and env come to {} bytes; a job's arguments and environment may "
                               "take {} (the kernel's limit is shared with what each node adds)",
                               total, kMaxExecTotalBytes));
  }
  return Status::Ok();
}

// Ray's submission_id: shown in URLs and tables, and looked up beside the
// head's own ids, which it must not shadow.
Status ValidateSubmission(const JobSpec& spec) {
  const std::string& id = spec.submission_id();
  if (!id.empty()) {
    constexpr size_t kMaxSubmissionId = 128;
    const bool plain = std::all_of(id.begin(), id.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    });
    if (!plain || id.size() > kMaxSubmissionId) {
      return AtKey("submission_id", Invalid(fmt::format("expected up to {} letters, digits, '_', '-' or '.', got {}",
                                                        kMaxSubmissionId, JsonQuote(id))));
    }
    if (id.rfind("job-", 0) == 0 && id.size() > 4 && std::isdigit(static_cast<unsigned char>(id[4]))) {
      return AtKey("submission_id", Invalid(fmt::format("{} has the form of the head's job ids (job-0001)", id)));
    }
    if (spec.has_tune() || spec.has_array()) {
      return AtKey("submission_id", Invalid("names one job: a sweep or an array makes many"));
    }
  }
  for (const auto& [key, value] : spec.metadata()) {
    RETURN_IF_ERROR(AtKey("metadata." + key, CheckText(key)));
    RETURN_IF_ERROR(AtKey("metadata." + key, CheckText(value)));
  }
  return Status::Ok();
}

}  // namespace

int64_t EffectiveCheckpointUploadRate(const JobSpec& spec) {
  return spec.checkpoint().has_upload_bytes_per_s() ? spec.checkpoint().upload_bytes_per_s()
                                                    : kDefaultCheckpointUploadRate;
}

RestartDelay EffectiveRestartDelay(const JobSpec& spec) {
  if (spec.has_restart_delay()) return spec.restart_delay();
  RestartDelay delay;
  delay.set_initial_s(kDefaultRestartDelayInitialS);
  delay.set_max_s(kDefaultRestartDelayMaxS);
  delay.set_factor(kDefaultRestartDelayFactor);
  return delay;
}

Status ValidateJobSpec(const JobSpec& spec, int max_num_workers) {
  RETURN_IF_ERROR(AtKey("name", CheckName(spec.name())));
  RETURN_IF_ERROR(AtKey("entrypoint", CheckEntrypoint(spec.entrypoint())));
  RETURN_IF_ERROR(AtKey("working_dir", CheckText(spec.working_dir())));
  RETURN_IF_ERROR(AtKey("num_workers", CheckNumWorkers(spec.num_workers(), max_num_workers)));
  RETURN_IF_ERROR(ValidateResources(spec));
  if (!Placement_IsValid(spec.placement())) {
    return Status::InvalidArgument(fmt::format("key 'placement': unknown placement {}", spec.placement()));
  }
  RETURN_IF_ERROR(ValidateEnv(spec));
  RETURN_IF_ERROR(CheckExecSize(spec));
  RETURN_IF_ERROR(AtKey("max_failures", CheckCount(spec.max_failures())));
  RETURN_IF_ERROR(AtKey("checkpoint.dir", CheckCheckpointDir(spec.checkpoint().dir())));
  RETURN_IF_ERROR(AtKey("checkpoint.keep", CheckCount(spec.checkpoint().keep())));
  RETURN_IF_ERROR(AtKey("checkpoint.storage", CheckCheckpointStorage(spec.checkpoint().storage())));
  RETURN_IF_ERROR(AtKey("checkpoint.upload_rate",
                        CheckUploadRate(static_cast<double>(spec.checkpoint().upload_bytes_per_s()))));
  if (spec.checkpoint().storage() == "shared" && spec.checkpoint().has_upload_bytes_per_s()) {
    return Status::InvalidArgument(
        "key 'checkpoint.upload_rate': with storage: shared nothing is uploaded; leave upload_rate out");
  }
  if (spec.checkpoint().storage() == "shared" && (spec.checkpoint().dir().empty() || spec.checkpoint().dir()[0] != '/')) {
    return Status::InvalidArgument(
        "key 'checkpoint.dir': with storage: shared, give the absolute path of a folder every machine shares");
  }
  for (int i = 0; i < spec.outputs_size(); ++i) {
    RETURN_IF_ERROR(AtKey(fmt::format("outputs[{}]", i), CheckPathUnderWorkingDir(spec.outputs(i), "an output")));
  }
  // Outputs need a working_dir: without one, the rank would run in the
  // agent's own folder and the job fail at its end with '"" is not a folder'.
  if (spec.working_dir().empty() && spec.outputs_size() > 0) {
    return Status::InvalidArgument("key 'outputs': outputs are paths under the job's working_dir, and it has none; "
                                   "give a working_dir");
  }
  RETURN_IF_ERROR(AtKey("outputs_storage", CheckOutputsStorage(spec.outputs_storage())));
  RETURN_IF_ERROR(AtKey("run_as", CheckRunAs(spec.run_as())));
  RETURN_IF_ERROR(AtKey("config", CheckConfigJson(spec.config_json())));
  RETURN_IF_ERROR(AtKey("timeout", CheckTimeout(spec.timeout_s())));
  RETURN_IF_ERROR(AtKey("priority", CheckPriority(spec.priority())));
  if (!spec.priority_class().empty()) RETURN_IF_ERROR(AtKey("priority", CheckPriorityClass(spec.priority_class())));
  RETURN_IF_ERROR(AtKey("preemption_grace_s", CheckPreemptionGrace(spec.preemption_grace_s())));
  RETURN_IF_ERROR(AtKey("hang_timeout_s", CheckHangTimeout(spec.hang_timeout_s())));
  if (spec.has_max_preemptions()) RETURN_IF_ERROR(AtKey("max_preemptions", CheckMaxPreemptions(spec.max_preemptions())));
  if (spec.has_restart_delay()) RETURN_IF_ERROR(AtKey("restart_delay", CheckRestartDelay(spec.restart_delay())));
  for (int i = 0; i < spec.excludes_size(); ++i) {
    RETURN_IF_ERROR(AtKey(fmt::format("excludes[{}]", i), CheckExclude(spec.excludes(i))));
  }
  if (!WorkingDirMode_IsValid(spec.working_dir_mode())) {
    return Status::InvalidArgument(fmt::format("key 'working_dir_mode': unknown mode {}", spec.working_dir_mode()));
  }
  if (spec.max_package_bytes() != 0) RETURN_IF_ERROR(AtKey("max_package_size", CheckPackageCap(spec.max_package_bytes())));
  if (spec.log_limit_bytes() != 0) RETURN_IF_ERROR(AtKey("log_limit", CheckLogLimit(spec.log_limit_bytes())));
  if (!spec.package_id().empty()) {
    bool hex = spec.package_id().size() == 64 &&
               std::all_of(spec.package_id().begin(), spec.package_id().end(),
                           [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f'); });
    if (!hex) return Status::InvalidArgument("key 'package_id': expected a SHA-256 in lower-case hex");
    if (spec.working_dir_mode() == SHARED) {
      return Status::InvalidArgument("key 'package_id': a job with working_dir_mode: shared ships no package");
    }
  }
  if (!spec.dvclive_dir().empty()) {
    RETURN_IF_ERROR(AtKey("dvclive", CheckPathUnderWorkingDir(spec.dvclive_dir(), "the DVCLive folder")));
  }
  if (spec.has_tune()) RETURN_IF_ERROR(ValidateTuneSpec(spec));
  if (spec.has_array()) {
    RETURN_IF_ERROR(AtKey("array.count", CheckArrayCount(spec.array().count())));
    RETURN_IF_ERROR(AtKey("array.max_concurrent",
                          CheckArrayMaxConcurrent(spec.array().max_concurrent())));
    if (spec.has_tune()) return Status::InvalidArgument("key 'array': a sweep (tune) cannot also be an array");
  }
  RETURN_IF_ERROR(ValidateSubmission(spec));
  // The head numbers an array's jobs; a submitter may not claim a place in one.
  if (!spec.array_id().empty() || spec.array_index() != 0) {
    return Status::InvalidArgument("key 'array_id': set by the head for the jobs of an array, not by a submitter");
  }
  return Status::Ok();
}

}  // namespace clusterd
