// ParseJobSpec and LoadJobSpecFile: the file's document (job_file_document.h),
// then one small parser per top-level key (kKeys below).
#include "common/jobspec/job_spec.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/jobspec/job_file_document.h"
#include "common/jobspec/job_spec_checks.h"
#include "common/jobspec/job_spec_units.h"
#include "common/jobspec/job_spec_yaml.h"
#include "common/resources.h"
#include "common/jobspec/tune_spec_yaml.h"

namespace clusterd {

namespace {

namespace fs = std::filesystem;
using namespace job_spec_internal;  // NOLINT: this file is their only user

constexpr int kDefaultCheckpointKeep = 2;

struct ParseContext {
  int max_num_workers;
  // Where a relative working_dir is resolved and checked; unset: kept as is.
  std::optional<fs::path> cwd;
};

using KeyParser = Status (*)(const Field&, const ParseContext&, JobSpec*);

Status ParseName(const Field& f, const ParseContext&, JobSpec* spec) {
  ASSIGN_OR_RETURN(std::string name, ReadString(f));
  RETURN_IF_ERROR(f.Check(CheckName(name)));
  spec->set_name(name);
  return Status::Ok();
}

// A string runs through the shell (pipes, &&, $VARS work as typed);
// a list is the argv itself, for arguments with spaces or quotes.
Status ParseEntrypoint(const Field& f, const ParseContext&, JobSpec* spec) {
  auto* argv = spec->mutable_entrypoint();
  argv->Clear();
  if (f.node().IsScalar()) {
    ASSIGN_OR_RETURN(std::string command, ReadString(f));
    for (const std::string& arg : {std::string("/bin/sh"), std::string("-c"), command}) argv->Add()->assign(arg);
  } else if (f.node().IsSequence()) {
    RETURN_IF_ERROR(ForEachItem(f, [&](const Field& item) -> Status {
      ASSIGN_OR_RETURN(*argv->Add(), ReadString(item));
      return Status::Ok();
    }));
  } else {
    return f.TypeError("a shell command or a list of arguments");
  }
  return f.Check(CheckEntrypoint(*argv));
}

// Relative to where clusterctl runs, as a user typing a path expects; the
// spec carries the absolute path, since workers run elsewhere.
Status ParseWorkingDir(const Field& f, const ParseContext& ctx, JobSpec* spec) {
  ASSIGN_OR_RETURN(std::string dir, ReadString(f));
  if (dir.empty() || !ctx.cwd) {
    spec->set_working_dir(dir);
    return Status::Ok();
  }
  fs::path resolved = (fs::path(dir).is_absolute() ? fs::path(dir) : *ctx.cwd / dir).lexically_normal();
  if (!resolved.has_filename() && resolved.has_parent_path()) resolved = resolved.parent_path();  // "/a/b/" -> "/a/b"
  std::error_code ec;
  fs::file_status st = fs::status(resolved, ec);
  if (!fs::exists(st)) return f.Error(fmt::format("working_dir '{}' does not exist (looked for {})", dir, resolved.string()));
  if (!fs::is_directory(st)) return f.Error(fmt::format("working_dir '{}' is not a directory", dir));
  spec->set_working_dir(resolved.string());
  return Status::Ok();
}

Status ParseNumWorkers(const Field& f, const ParseContext& ctx, JobSpec* spec) {
  ASSIGN_OR_RETURN(int64_t n, ReadInteger(f));
  RETURN_IF_ERROR(f.Check(CheckNumWorkers(n, ctx.max_num_workers)));
  spec->set_num_workers(static_cast<int32_t>(n));
  return Status::Ok();
}

// memory takes "4Gi" as well as a byte count; the rest are plain numbers.
Result<double> ReadResourceAmount(const std::string& name, const Field& f) {
  if (name != kMemory || !f.node().IsScalar() || ParseDecimal(f.node().Scalar())) return ReadNumber(f);
  auto bytes = ParseMemory(f.node().Scalar());
  if (!bytes.ok()) return f.Error(bytes.status().message());
  return *bytes;
}

Status ParseResources(const Field& f, const ParseContext&, JobSpec* spec) {
  auto* amounts = spec->mutable_resources_per_worker()->mutable_amounts();
  amounts->clear();  // given: replaces the {CPU: 1} default, as in Ray
  return ForEachEntry(f, nullptr, [&](const std::string& name, const Field& value) -> Status {
    RETURN_IF_ERROR(value.CheckKey(CheckResourceName(name)));
    ASSIGN_OR_RETURN(double amount, ReadResourceAmount(name, value));
    RETURN_IF_ERROR(value.Check(CheckResourceAmount(name, amount)));
    (*amounts)[name] = amount;
    return Status::Ok();
  });
}

Status ParsePlacement(const Field& f, const ParseContext&, JobSpec* spec) {
  ASSIGN_OR_RETURN(std::string text, ReadString(f));
  std::string name = text;
  for (char& c : name) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Placement placement;
  if (!Placement_Parse(name, &placement)) {
    std::string hint = DidYouMean(name, {"PACK", "SPREAD", "STRICT_SPREAD"});
    return f.Error(fmt::format("expected PACK, SPREAD or STRICT_SPREAD, got '{}'{}", text,
                               hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
  }
  spec->set_placement(placement);
  return Status::Ok();
}

// Values are strings to the process; `PORT: 8080` means "8080".
Status ParseEnv(const Field& f, const ParseContext&, JobSpec* spec) {
  return ForEachEntry(f, nullptr, [&](const std::string& name, const Field& value) -> Status {
    RETURN_IF_ERROR(value.CheckKey(CheckEnvName(name)));
    ASSIGN_OR_RETURN((*spec->mutable_env())[name], ReadString(value));
    return Status::Ok();
  });
}

Status ParseEnvPassthrough(const Field& f, const ParseContext&, JobSpec* spec) {
  return ForEachItem(f, [&](const Field& item) -> Status {
    ASSIGN_OR_RETURN(std::string pattern, ReadString(item));
    RETURN_IF_ERROR(item.Check(CheckPassthroughPattern(pattern)));
    spec->add_env_passthrough(pattern);
    return Status::Ok();
  });
}

Result<int32_t> ReadCount(const Field& f) {
  ASSIGN_OR_RETURN(int64_t n, ReadInteger(f));
  RETURN_IF_ERROR(f.Check(CheckCount(n)));
  return static_cast<int32_t>(n);
}

Status ParseMaxFailures(const Field& f, const ParseContext&, JobSpec* spec) {
  ASSIGN_OR_RETURN(int32_t n, ReadCount(f));
  spec->set_max_failures(n);
  return Status::Ok();
}

// checkpoint.upload_rate: bytes a second as a size, "/s" optional
// ("100Mi", "1GB/s"); 0 or "unlimited" for no limit.
Result<int64_t> ReadUploadRate(const Field& f) {
  if (!f.node().IsScalar()) return f.TypeError("a rate like 100MiB/s, or unlimited");
  const std::string& given = f.node().Scalar();
  std::string text = given;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text == "unlimited") return int64_t{0};
  if (text.size() > 2 && text.compare(text.size() - 2, 2, "/s") == 0) text.resize(text.size() - 2);
  if (!ParseMemory(text).ok()) {
    return f.Error(fmt::format("expected a rate like 100MiB/s, 1GB/s or unlimited, got '{}'", given));
  }
  auto bytes = ParseMemory(text);
  RETURN_IF_ERROR(f.Check(CheckUploadRate(*bytes)));
  return static_cast<int64_t>(*bytes);
}

Status ParseCheckpoint(const Field& f, const ParseContext&, JobSpec* spec) {
  static const std::vector<std::string> kCheckpointKeys = {"dir", "keep", "storage", "upload_rate"};
  auto* checkpoint = spec->mutable_checkpoint();
  return ForEachEntry(f, &kCheckpointKeys, [&](const std::string& key, const Field& value) -> Status {
    if (key == "dir") {
      ASSIGN_OR_RETURN(*checkpoint->mutable_dir(), ReadString(value));
      RETURN_IF_ERROR(value.Check(CheckCheckpointDir(checkpoint->dir())));
    } else if (key == "storage") {
      ASSIGN_OR_RETURN(*checkpoint->mutable_storage(), ReadString(value));
      RETURN_IF_ERROR(value.Check(CheckCheckpointStorage(checkpoint->storage())));
    } else if (key == "upload_rate") {
      ASSIGN_OR_RETURN(int64_t rate, ReadUploadRate(value));
      checkpoint->set_upload_bytes_per_s(rate);
    } else {
      ASSIGN_OR_RETURN(int32_t keep, ReadCount(value));
      checkpoint->set_keep(keep);
    }
    return Status::Ok();
  });
}

Status ParseConfig(const Field& f, const ParseContext&, JobSpec* spec) {
  if (f.node().IsNull()) {
    spec->set_config_json("{}");
    return Status::Ok();
  }
  if (!f.node().IsMap()) return f.TypeError("a map");
  ASSIGN_OR_RETURN(*spec->mutable_config_json(), ToJson(f));
  return Status::Ok();
}

Status ParseTimeout(const Field& f, const ParseContext&, JobSpec* spec) {
  if (!f.node().IsScalar()) return f.TypeError("a duration like 90, '90s', '10m' or '2h'");
  auto seconds = ParseDuration(f.node().Scalar());
  if (!seconds.ok()) return f.Error(seconds.status().message());
  spec->set_timeout_s(*seconds);
  return Status::Ok();
}

Result<double> ReadDuration(const Field& f) {
  if (!f.node().IsScalar()) return f.TypeError("a duration like 1, '500ms', '30s' or '5m'");
  auto seconds = ParseDuration(f.node().Scalar());
  if (!seconds.ok()) return f.Error(seconds.status().message());
  return *seconds;
}

// Hang detection (docs/RELIABILITY.md "Hung gangs"): seconds without a
// line printed, a report or CPU used by any rank; 0 is off.
Status ParseHangTimeout(const Field& f, const ParseContext&, JobSpec* spec) {
  ASSIGN_OR_RETURN(double seconds, ReadDuration(f));
  RETURN_IF_ERROR(f.Check(CheckHangTimeout(seconds)));
  spec->set_hang_timeout_s(seconds);
  return Status::Ok();
}

// A map of initial, max and factor; a key left out takes its default.
Status ParseRestartDelay(const Field& f, const ParseContext&, JobSpec* spec) {
  static const std::vector<std::string> kDelayKeys = {"initial", "max", "factor"};
  if (!f.node().IsMap()) return f.TypeError("a map like {initial: 1s, max: 5m, factor: 2}");
  RestartDelay* delay = spec->mutable_restart_delay();
  *delay = EffectiveRestartDelay(JobSpec());
  bool max_given = false;
  RETURN_IF_ERROR(ForEachEntry(f, &kDelayKeys, [&](const std::string& key, const Field& value) -> Status {
    if (key == "factor") {
      ASSIGN_OR_RETURN(double factor, ReadNumber(value));
      delay->set_factor(factor);
      return Status::Ok();
    }
    ASSIGN_OR_RETURN(double seconds, ReadDuration(value));
    if (key == "initial") {
      delay->set_initial_s(seconds);
    } else {
      delay->set_max_s(seconds);
      max_given = true;
    }
    return Status::Ok();
  }));
  // {initial: 10m} alone means waits of 10 minutes, not an error about the
  // 5-minute default cap.
  if (!max_given) delay->set_max_s(std::max(delay->max_s(), delay->initial_s()));
  return f.Check(CheckRestartDelay(*delay));
}

Status ParseExcludes(const Field& f, const ParseContext&, JobSpec* spec) {
  return ForEachItem(f, [&](const Field& item) -> Status {
    ASSIGN_OR_RETURN(std::string pattern, ReadString(item));
    RETURN_IF_ERROR(item.Check(CheckExclude(pattern)));
    spec->add_excludes(pattern);
    return Status::Ok();
  });
}

Status ParseWorkingDirMode(const Field& f, const ParseContext&, JobSpec* spec) {
  ASSIGN_OR_RETURN(std::string text, ReadString(f));
  std::string name = text;
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  WorkingDirMode mode;
  if (!WorkingDirMode_Parse(name, &mode)) {
    std::string lower = text;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string hint = DidYouMean(lower, {"ship", "shared"});
    return f.Error(fmt::format("expected ship or shared, got '{}'{}", text,
                               hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
  }
  spec->set_working_dir_mode(mode);
  return Status::Ok();
}

Status ParseMaxPackageSize(const Field& f, const ParseContext&, JobSpec* spec) {
  if (!f.node().IsScalar()) return f.TypeError("a size like 4Gi or 500Mi");
  auto bytes = ParseMemory(f.node().Scalar());
  if (!bytes.ok()) return f.Error(bytes.status().message());
  RETURN_IF_ERROR(f.Check(CheckPackageCap(static_cast<int64_t>(*bytes))));
  spec->set_max_package_bytes(static_cast<int64_t>(*bytes));
  return Status::Ok();
}

// Each rank's output kept per attempt (its first and last part).
Status ParseLogLimit(const Field& f, const ParseContext&, JobSpec* spec) {
  if (!f.node().IsScalar()) return f.TypeError("a size like 256Mi or 1Gi");
  auto bytes = ParseMemory(f.node().Scalar());
  if (!bytes.ok()) return f.Error(bytes.status().message());
  if (*bytes >= 9.2e18) return f.Error(fmt::format("{} is too large for a log limit", f.node().Scalar()));
  RETURN_IF_ERROR(f.Check(CheckLogLimit(static_cast<int64_t>(*bytes))));
  spec->set_log_limit_bytes(static_cast<int64_t>(*bytes));
  return Status::Ok();
}

// Paths under the working folder that rank 0 writes: files or folders.
Status ParseOutputs(const Field& f, const ParseContext&, JobSpec* spec) {
  return ForEachItem(f, [&](const Field& item) -> Status {
    ASSIGN_OR_RETURN(std::string path, ReadString(item));
    RETURN_IF_ERROR(item.Check(CheckPathUnderWorkingDir(path, "an output")));
    spec->add_outputs(path);
    return Status::Ok();
  });
}

Status ParseOutputsStorage(const Field& f, const ParseContext&, JobSpec* spec) {
  ASSIGN_OR_RETURN(*spec->mutable_outputs_storage(), ReadString(f));
  return f.Check(CheckOutputsStorage(spec->outputs_storage()));
}

// The user the ranks run as on each node (docs/SECURITY.md).
Status ParseRunAs(const Field& f, const ParseContext&, JobSpec* spec) {
  ASSIGN_OR_RETURN(*spec->mutable_run_as(), ReadString(f));
  return f.Check(CheckRunAs(spec->run_as()));
}

Status ParseDvclive(const Field& f, const ParseContext&, JobSpec* spec) {
  ASSIGN_OR_RETURN(*spec->mutable_dvclive_dir(), ReadString(f));
  return f.Check(CheckPathUnderWorkingDir(spec->dvclive_dir(), "the DVCLive folder"));
}

// Preemption (docs/SHARING.md): whether a pending job of higher priority
// may take its room, how long its ranks have between SIGTERM and SIGKILL
// then, and how often it may be preempted at most.
Status ParsePreemptible(const Field& f, const ParseContext&, JobSpec* spec) {
  const std::string text = f.node().IsScalar() ? f.node().Scalar() : "";
  if (text != "true" && text != "false") return f.TypeError("true or false");
  spec->set_not_preemptible(text == "false");
  return Status::Ok();
}

Status ParsePreemptionGrace(const Field& f, const ParseContext&, JobSpec* spec) {
  ASSIGN_OR_RETURN(double seconds, ReadDuration(f));
  RETURN_IF_ERROR(f.Check(CheckPreemptionGrace(seconds)));
  spec->set_preemption_grace_s(seconds);
  return Status::Ok();
}

Status ParseMaxPreemptions(const Field& f, const ParseContext&, JobSpec* spec) {
  ASSIGN_OR_RETURN(int64_t n, ReadInteger(f));
  RETURN_IF_ERROR(f.Check(CheckMaxPreemptions(n)));
  spec->set_max_preemptions(static_cast<int32_t>(n));
  return Status::Ok();
}

// The queue policy (docs/SHARING.md): a priority as a number, or as the
// name of one of the head's classes, which the head resolves at submit.
Status ParsePriority(const Field& f, const ParseContext&, JobSpec* spec) {
  if (!f.node().IsScalar()) return f.TypeError("an integer, or the name of a priority class");
  const std::string text = f.node().Scalar();
  const bool number = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-' ||
                                        text[0] == '+');
  if (number) {
    ASSIGN_OR_RETURN(int64_t n, ReadInteger(f));
    RETURN_IF_ERROR(f.Check(CheckPriority(n)));
    spec->set_priority(static_cast<int32_t>(n));
    return Status::Ok();
  }
  RETURN_IF_ERROR(f.Check(CheckPriorityClass(text)));
  spec->set_priority_class(text);
  return Status::Ok();
}

Status ParseBorrow(const Field& f, const ParseContext&, JobSpec* spec) {
  const std::string text = f.node().IsScalar() ? f.node().Scalar() : "";
  if (text != "true" && text != "false") return f.TypeError("true or false");
  spec->set_borrow(text == "true");
  return Status::Ok();
}

// time_limit: the name the queue policy documents for the same limit as
// timeout (backfill plans with it); one of the two.
Status ParseTimeLimit(const Field& f, const ParseContext& ctx, JobSpec* spec) {
  if (spec->timeout_s() > 0) return f.Error("give timeout or time_limit, not both");
  return ParseTimeout(f, ctx, spec);
}

// Many jobs from one file, as Slurm's --array=0-(count-1)%max_concurrent.
Status ParseArray(const Field& f, const ParseContext&, JobSpec* spec) {
  static const std::vector<std::string> kArrayKeys = {"count", "max_concurrent"};
  if (!f.node().IsMap()) return f.TypeError("a map with count and, optionally, max_concurrent");
  ArraySpec* array = spec->mutable_array();
  RETURN_IF_ERROR(ForEachEntry(f, &kArrayKeys, [&](const std::string& key, const Field& value) -> Status {
    ASSIGN_OR_RETURN(int64_t n, ReadInteger(value));
    if (key == "count") {
      RETURN_IF_ERROR(value.Check(CheckArrayCount(n)));
      array->set_count(static_cast<int32_t>(n));
    } else {
      RETURN_IF_ERROR(value.Check(CheckArrayMaxConcurrent(n)));
      array->set_max_concurrent(static_cast<int32_t>(n));
    }
    return Status::Ok();
  }));
  if (array->count() == 0) return f.Error("missing required key 'count' (how many jobs the array makes)");
  return Status::Ok();
}

// A sweep (search_space.h); its placeholders are checked once the whole
// file is read, since entrypoint may come before or after it.
Status ParseTuneSection(const Field& f, const ParseContext&, JobSpec* spec) {
  return ParseTune(f, spec->mutable_tune());
}

// The entrypoint's field, for errors found after the keys were read.
Field EntrypointField(const Locator& loc, const YAML::Node& root) {
  for (auto it = root.begin(); it != root.end(); ++it) {
    const YAML::Node key = it->first;
    if (key.IsScalar() && key.Scalar() == "entrypoint") return Field(&loc, it->second, "entrypoint", key.Mark());
  }
  return Field(&loc, YAML::Node(), "entrypoint", root.Mark());
}

struct KeySpec {
  const char* key;
  KeyParser parse;
};

// The top-level keys, in the order config/README.md lists them.
constexpr KeySpec kKeys[] = {
    {"name", ParseName},
    {"entrypoint", ParseEntrypoint},
    {"working_dir", ParseWorkingDir},
    {"working_dir_mode", ParseWorkingDirMode},
    {"excludes", ParseExcludes},
    {"max_package_size", ParseMaxPackageSize},
    {"log_limit", ParseLogLimit},
    {"num_workers", ParseNumWorkers},
    {"resources_per_worker", ParseResources},
    {"placement", ParsePlacement},
    {"env", ParseEnv},
    {"env_passthrough", ParseEnvPassthrough},
    {"max_failures", ParseMaxFailures},
    {"restart_delay", ParseRestartDelay},
    {"checkpoint", ParseCheckpoint},
    {"config", ParseConfig},
    {"timeout", ParseTimeout},
    {"time_limit", ParseTimeLimit},
    {"hang_timeout_s", ParseHangTimeout},
    {"dvclive", ParseDvclive},
    {"outputs", ParseOutputs},
    {"outputs_storage", ParseOutputsStorage},
    {"run_as", ParseRunAs},
    {"preemptible", ParsePreemptible},
    {"preemption_grace_s", ParsePreemptionGrace},
    {"max_preemptions", ParseMaxPreemptions},
    {"priority", ParsePriority},
    {"borrow", ParseBorrow},
    {"tune", ParseTuneSection},
    {"array", ParseArray},
};

const std::vector<std::string>& KnownKeys() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& k : kKeys) names.push_back(k.key);
    return names;
  }();
  return kNames;
}

// The defaults of keys left out. The rest are the proto's zero values.
JobSpec DefaultSpec(const std::string& file_name) {
  JobSpec spec;
  std::string stem = fs::path(file_name).stem().string();
  spec.set_name(stem.empty() ? "job" : stem);
  spec.set_num_workers(1);
  (*spec.mutable_resources_per_worker()->mutable_amounts())[kCpu] = 1;
  spec.set_placement(PACK);
  spec.mutable_checkpoint()->set_keep(kDefaultCheckpointKeep);
  spec.set_source_file(file_name);
  return spec;
}

Result<JobSpec> Parse(const std::string& text, const std::string& file_name, const std::vector<std::string>& override_args,
                      const ParseContext& ctx) {
  std::vector<Override> overrides;
  for (const auto& arg : override_args) {
    ASSIGN_OR_RETURN(Override o, ParseOverride(arg));
    overrides.push_back(std::move(o));
  }
  Locator loc(file_name, overrides);
  RETURN_IF_ERROR(CheckIsText(text, loc));
  ASSIGN_OR_RETURN(YAML::Node root, LoadTree(text, loc, overrides));
  JobSpec spec = DefaultSpec(file_name);
  RETURN_IF_ERROR(ForEachEntry(Field(&loc, root, "", root.Mark()), &KnownKeys(),
                               [&](const std::string& key, const Field& value) {
                                 auto it = std::find_if(std::begin(kKeys), std::end(kKeys),
                                                        [&](const KeySpec& k) { return key == k.key; });
                                 return it->parse(value, ctx, &spec);
                               }));
  if (spec.entrypoint().empty()) return loc.FileError("missing required key 'entrypoint'");
  if (spec.has_tune()) RETURN_IF_ERROR(CheckEntrypointPlaceholders(EntrypointField(loc, root), spec));
  // Everything was checked with its line above; this is the guard the head
  // also runs, kept here so that the two can never disagree.
  RETURN_IF_ERROR(ValidateJobSpec(spec, ctx.max_num_workers).WithContext(file_name));
  return spec;
}

// yaml-cpp and the standard library throw; nothing may escape the API.
template <typename Fn>
Result<JobSpec> NoThrow(const std::string& file_name, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("{}: unexpected error while reading the job file: {}", file_name, e.what()));
  }
}

}  // namespace

Result<JobSpec> ParseJobSpec(const std::string& text, const std::string& file_name,
                             const std::vector<std::string>& overrides, int max_num_workers) {
  return NoThrow(file_name, [&] { return Parse(text, file_name, overrides, ParseContext{max_num_workers, std::nullopt}); });
}

Result<JobSpec> LoadJobSpecFile(const std::string& path, const std::vector<std::string>& overrides,
                                int max_num_workers) {
  return NoThrow(path, [&]() -> Result<JobSpec> {
    ASSIGN_OR_RETURN(std::string text, ReadCapped(path));
    std::error_code ec;
    fs::path cwd = fs::current_path(ec);
    if (ec) return Status::IOError(fmt::format("{}: cannot tell the current directory: {}", path, ec.message()));
    return Parse(text, path, overrides, ParseContext{max_num_workers, cwd});
  });
}

}  // namespace clusterd
