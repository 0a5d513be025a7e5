// Trial counts, reproducible draws, placeholders and config merging for
// sweeps. Draws use SplitMix64 rather than <random>'s distributions, whose
// output the standard leaves to each library: the same seed must give the
// same trials wherever clusterd was built.
#include "common/jobspec/job_spec_checks.h"
#include "common/jobspec/search_space.h"
#include "common/jobspec/shell_placeholders.h"
#include "common/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <regex>

#include <fmt/format.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

namespace clusterd {

namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The draw for one dimension of one trial, as a uniform number in [0, 1).
double Uniform01(int64_t seed, int64_t index, int dimension) {
  uint64_t x = SplitMix64(static_cast<uint64_t>(seed));
  x = SplitMix64(x ^ static_cast<uint64_t>(index));
  x = SplitMix64(x ^ static_cast<uint64_t>(dimension));
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

bool IsGrid(const SearchDimension& d) { return d.distribution() == "grid"; }

int64_t GridSize(const TuneSpec& tune) {
  int64_t size = 1;
  for (const auto& d : tune.search_space()) {
    if (IsGrid(d)) size *= std::max(1, d.values_json_size());
    if (size > kMaxTrials) return kMaxTrials + 1;  // refused anyway; no overflow
  }
  return size;
}

std::string Unquoted(const std::string& json) {
  if (json.empty() || json[0] != '"') return json;
  google::protobuf::Value value;
  if (!google::protobuf::util::JsonStringToMessage(json, &value).ok()) return json;
  return value.string_value();
}

Status Invalid(const std::string& key, const std::string& message) {
  return Status::InvalidArgument(fmt::format("key '{}': {}", key, message));
}

}  // namespace

int64_t TrialCount(const TuneSpec& tune) { return std::max(0, tune.num_samples()) * GridSize(tune); }

TrialParams SampleTrial(const TuneSpec& tune, int64_t index) {
  TrialParams params;
  const int64_t grid_size = GridSize(tune);
  const int64_t sample = index / grid_size;
  int64_t combo = index % grid_size;
  // The last grid dimension cycles fastest: peel the combination from the back.
  for (int i = tune.search_space_size() - 1; i >= 0; --i) {
    const SearchDimension& d = tune.search_space(i);
    if (!IsGrid(d) || d.values_json_size() == 0) continue;
    params[d.name()] = d.values_json(static_cast<int>(combo % d.values_json_size()));
    combo /= d.values_json_size();
  }
  for (int i = 0; i < tune.search_space_size(); ++i) {
    const SearchDimension& d = tune.search_space(i);
    const double u = Uniform01(tune.seed(), sample, i);
    if (d.distribution() == "uniform") {
      params[d.name()] = fmt::format("{}", d.low() + u * (d.high() - d.low()));
    } else if (d.distribution() == "loguniform") {
      params[d.name()] = fmt::format("{}", std::exp(std::log(d.low()) + u * (std::log(d.high()) - std::log(d.low()))));
    } else if (d.distribution() == "randint") {
      const double span = std::floor(d.high() - d.low());
      params[d.name()] = fmt::format("{}", static_cast<int64_t>(d.low() + std::floor(u * span)));
    } else if (d.distribution() == "choice" && d.values_json_size() > 0) {
      params[d.name()] = d.values_json(static_cast<int>(u * d.values_json_size()));
    }
  }
  return params;
}

std::vector<std::string> Placeholders(const std::string& arg) {
  std::vector<std::string> names;
  for (size_t pos = 0; pos < arg.size(); ++pos) {
    if (size_t n = PlaceholderAt(arg, pos)) names.push_back(arg.substr(pos + 1, n));
  }
  return names;
}

namespace {

// A number as JSON writes one: nothing arithmetic could evaluate further.
bool IsJsonNumber(const std::string& text) {
  static const std::regex kNumber("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?");
  return std::regex_match(text, kNumber);
}

Status Refused(const std::string& name, ShellContext context) {
  const std::string variable = ParamVariable(name);
  if (context == ShellContext::kHereDocWord) {
    return Status::InvalidArgument(fmt::format(
        "placeholder '{{{}}}' stands in a here-document's delimiter, which the shell does not expand", name));
  }
  // Its text reaches the program as written: a value there is read by
  // whatever reads it, and a value holding the delimiter's line would end
  // the here-document and run the rest as the command's own.
  return Status::InvalidArgument(fmt::format(
      "placeholder '{{{}}}' stands in a quoted here-document (<<'EOF'), whose text the shell does not expand: "
      "unquote its delimiter (<<EOF) to have ${{{}}} there, or have what reads it read ${} from the environment",
      name, variable, variable));
}

}  // namespace

std::string Substitute(const std::string& arg, const TrialParams& params) {
  std::string out;
  for (size_t pos = 0; pos < arg.size(); ++pos) {
    size_t n = PlaceholderAt(arg, pos);
    auto it = n ? params.find(arg.substr(pos + 1, n)) : params.end();
    if (it != params.end()) {
      out += Unquoted(it->second);
      pos += n + 1;
    } else {
      out += arg[pos];
    }
  }
  return out;
}

bool IsShellEntrypoint(const JobSpec& spec) {
  return spec.entrypoint_size() == 3 && spec.entrypoint(0) == "/bin/sh" && spec.entrypoint(1) == "-c";
}

std::string ParamVariable(const std::string& name) { return "CLUSTER_PARAM_" + name; }

std::map<std::string, std::string> TrialEnvironment(const JobSpec& trial) {
  std::map<std::string, std::string> env;
  for (const auto& [name, json] : trial.trial_params()) {
    if (IsPlaceholderName(name)) env[ParamVariable(name)] = Unquoted(json);
  }
  return env;
}

Result<std::string> SubstituteInShell(const std::string& command, const TrialParams& params) {
  return RewriteShell(command, [&](const std::string& name, ShellContext context) -> Result<std::string> {
    auto it = params.find(name);
    if (it == params.end()) return "{" + name + "}";
    const std::string value = Unquoted(it->second);
    const std::string reference = "${" + ParamVariable(name) + "}";
    if (value.find('\0') != std::string::npos) {
      return Status::InvalidArgument(fmt::format("parameter '{}': its value holds a NUL character, which no "
                                                 "environment variable can",
                                                 name));
    }
    switch (context) {
      case ShellContext::kUnquoted: return "\"" + reference + "\"";
      case ShellContext::kSingle: return "'\"" + reference + "\"'";
      case ShellContext::kDouble:
      case ShellContext::kHereDoc: return reference;
      case ShellContext::kComment: return "{" + name + "}";
      case ShellContext::kArithmetic:
        if (!IsJsonNumber(value)) {
          return Status::InvalidArgument(fmt::format("placeholder '{{{}}}' stands in $((...)), where a value must be "
                                                     "a number, and its value is {}",
                                                     name, JsonQuote(value)));
        }
        return reference;
      case ShellContext::kQuotedHereDoc:
      case ShellContext::kHereDocWord: return Refused(name, context);
    }
    return Status::Internal("unknown shell context");
  });
}

Result<std::string> MergeConfig(const std::string& config_json, const TrialParams& params) {
  namespace pb = google::protobuf;
  pb::Struct config;
  if (!config_json.empty() && !pb::util::JsonStringToMessage(config_json, &config).ok()) {
    return Status::InvalidArgument("config is not a JSON object: " + config_json.substr(0, 80));
  }
  for (const auto& [name, json] : params) {
    pb::Value value;
    if (!pb::util::JsonStringToMessage(json, &value).ok()) {
      return Status::InvalidArgument(fmt::format("parameter '{}': not a JSON value: {}", name, json));
    }
    (*config.mutable_fields())[name] = value;
  }
  std::string out;
  if (!pb::util::MessageToJsonString(config, &out).ok()) return Status::Internal("cannot write the trial's config");
  return out;
}

Status ValidateTuneSpec(const JobSpec& spec) {
  const TuneSpec& tune = spec.tune();
  if (tune.metric().empty()) return Invalid("tune", "missing required key 'metric' (the name trials report)");
  if (tune.num_samples() < 1) return Invalid("tune.num_samples", fmt::format("expected an integer >= 1, got {}", tune.num_samples()));
  if (tune.max_concurrent() < 0) {
    return Invalid("tune.max_concurrent", fmt::format("expected an integer >= 0, got {}", tune.max_concurrent()));
  }
  std::map<std::string, int> seen;
  for (const auto& d : tune.search_space()) {
    const std::string key = "tune.search_space." + d.name();
    if (d.name().empty() || !(std::isalnum(static_cast<unsigned char>(d.name()[0])) || d.name()[0] == '_')) {
      return Invalid(key, "a parameter needs a name of letters, digits and _");
    }
    if (!seen.emplace(d.name(), 0).second) return Invalid(key, "duplicate parameter");
    const std::string& kind = d.distribution();
    if (kind == "choice" || kind == "grid") {
      if (d.values_json_size() == 0) return Invalid(key + "." + kind, "expected a list of at least one value");
    } else if (kind == "uniform" || kind == "loguniform" || kind == "randint") {
      if (!std::isfinite(d.low()) || !std::isfinite(d.high()) || d.low() >= d.high()) {
        return Invalid(key + "." + kind, fmt::format("bad range [{}, {}]: low must be below high", d.low(), d.high()));
      }
      if (kind == "loguniform" && d.low() <= 0) {
        return Invalid(key + "." + kind, fmt::format("bad range [{}, {}]: loguniform needs low > 0", d.low(), d.high()));
      }
      if (kind == "randint" && (d.low() != std::floor(d.low()) || d.high() != std::floor(d.high()))) {
        return Invalid(key + "." + kind, fmt::format("bad range [{}, {}]: randint takes integers", d.low(), d.high()));
      }
    } else {
      return Invalid(key, fmt::format("unknown distribution '{}' (known: loguniform, uniform, randint, choice, grid)", kind));
    }
  }
  if (TrialCount(tune) > kMaxTrials) {
    return Invalid("tune.num_samples", fmt::format("the sweep would have more than {} trials", kMaxTrials));
  }
  if (tune.has_asha()) {
    const AshaSpec& a = tune.asha();
    if (a.time_attr().empty()) return Invalid("tune.scheduler.asha.time_attr", "expected a metric name");
    if (!(a.grace_period() > 0)) return Invalid("tune.scheduler.asha.grace_period", fmt::format("expected a number > 0, got {}", a.grace_period()));
    if (!(a.max_t() >= a.grace_period())) {
      return Invalid("tune.scheduler.asha.max_t", fmt::format("expected a number >= grace_period ({}), got {}", a.grace_period(), a.max_t()));
    }
    if (!(a.reduction_factor() > 1)) {
      return Invalid("tune.scheduler.asha.reduction_factor", fmt::format("expected a number > 1, got {}", a.reduction_factor()));
    }
  }
  if (!tune.best_params().empty()) {
    Status best = job_spec_internal::CheckPathUnderWorkingDir(tune.best_params(), "best_params");
    if (!best.ok()) return Invalid("tune.best_params", best.message());
  }
  for (const auto& [name, value] : tune.stop()) {
    if (name.empty()) return Invalid("tune.stop", "a criterion needs a metric name");
    if (!std::isfinite(value)) return Invalid("tune.stop." + name, "expected a finite number");
  }
  return CheckPlaceholders(spec);
}

Status CheckPlaceholders(const JobSpec& spec) {
  std::map<std::string, int> names;
  for (const auto& d : spec.tune().search_space()) names.emplace(d.name(), 0);
  for (int i = 0; i < spec.entrypoint_size(); ++i) {
    for (const std::string& name : Placeholders(spec.entrypoint(i))) {
      if (names.count(name) == 0) {
        return Invalid(fmt::format("entrypoint[{}]", i),
                       fmt::format("placeholder '{{{}}}' names no parameter of tune.search_space", name));
      }
    }
  }
  if (!IsShellEntrypoint(spec)) return Status::Ok();
  // Where a placeholder stands in the shell's command, whatever its value.
  auto refuse = [](const std::string& name, ShellContext context) -> Result<std::string> {
    if (context == ShellContext::kQuotedHereDoc || context == ShellContext::kHereDocWord) return Refused(name, context);
    return std::string();
  };
  auto command = RewriteShell(spec.entrypoint(2), refuse);
  if (!command.ok()) return Invalid("entrypoint[2]", command.status().message());
  return Status::Ok();
}

Result<JobSpec> TrialSpec(const JobSpec& sweep_spec, const std::string& sweep_id, int64_t index) {
  JobSpec spec = sweep_spec;
  const TrialParams params = SampleTrial(sweep_spec.tune(), index);
  spec.clear_tune();
  spec.set_name(fmt::format("{}-trial-{:03d}", sweep_spec.name(), index));
  auto* argv = spec.mutable_entrypoint();
  // A string entrypoint is shell code (JobSpecFromYaml makes it sh -c):
  // its values travel in the environment (TrialEnvironment), the command
  // only names them. An argument of a list is no code: the value is it.
  const bool shell = IsShellEntrypoint(sweep_spec);
  for (int i = 0; i < argv->size(); ++i) {
    std::string& arg = *argv->Mutable(i);
    if (shell && i == 2) {
      auto command = SubstituteInShell(arg, params);
      if (!command.ok()) return Status::InvalidArgument("entrypoint: " + command.status().message());
      arg = std::move(*command);
    } else {
      arg = Substitute(arg, params);
    }
  }
  ASSIGN_OR_RETURN(*spec.mutable_config_json(), MergeConfig(sweep_spec.config_json(), params));
  spec.set_sweep_id(sweep_id);
  spec.set_trial_index(static_cast<int32_t>(index));
  for (const auto& [name, json] : params) (*spec.mutable_trial_params())[name] = json;
  return spec;
}

}  // namespace clusterd
