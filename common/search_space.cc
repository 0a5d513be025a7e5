// Trial counts, reproducible draws, placeholders and config merging for
// sweeps. Draws use SplitMix64 rather than <random>'s distributions, whose
// output the standard leaves to each library: the same seed must give the
// same trials wherever clusterd was built.
#include "common/job_spec_checks.h"
#include "common/search_space.h"
#include "common/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>

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

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// "{name}" at `pos`: the name's length, or 0 when it is not a placeholder.
size_t PlaceholderAt(const std::string& arg, size_t pos) {
  if (arg[pos] != '{' || (pos > 0 && arg[pos - 1] == '$')) return 0;
  size_t end = pos + 1;
  while (end < arg.size() && IsIdentifierChar(arg[end])) ++end;
  if (end == pos + 1 || end >= arg.size() || arg[end] != '}') return 0;
  if (std::isdigit(static_cast<unsigned char>(arg[pos + 1]))) return 0;
  return end - pos - 1;
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

enum class ShellQuoting { kNone, kSingle, kDouble };

// The value as the shell must see it to give it back as is, where `quoting` is.
std::string QuotedFor(const std::string& value, ShellQuoting quoting) {
  std::string out;
  switch (quoting) {
    case ShellQuoting::kNone: return ShellWord(value);
    case ShellQuoting::kSingle:  // close, an escaped quote, open again
      for (char c : value) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      return out;
    case ShellQuoting::kDouble:
      for (char c : value) {
        if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
        out += c;
      }
      return out;
  }
  return out;
}

// Where a POSIX shell is in a command as it reads it (POSIX 2.2, 2.6.3):
// outside quotes, in '...', in "...", and inside command substitutions,
// $(...) and `...`, which start afresh even within double quotes.
class ShellQuotes {
 public:
  ShellQuoting quoting() const { return levels_.back().quoting; }
  // How many `...` the reader is inside: each takes a backslash off before
  // \\, ` and $ of what it holds before that is read.
  int backticks() const {
    int n = 0;
    for (const Level& level : levels_) n += level.opened_by == Level::kBacktick;
    return n;
  }

  // Reads `command[*pos]`; a backslash outside single quotes takes the
  // next character too (and *pos moves past it).
  void Read(const std::string& command, size_t* pos) {
    const char c = command[*pos];
    Level& level = levels_.back();
    if (level.quoting == ShellQuoting::kSingle) {
      if (c == '\'') level.quoting = ShellQuoting::kNone;
      return;
    }
    if (c == '\\') {
      if (*pos + 1 < command.size()) ++*pos;
      return;
    }
    if (c == '$' && *pos + 1 < command.size() && command[*pos + 1] == '(') {
      ++*pos;
      levels_.push_back({ShellQuoting::kNone, Level::kParen});
      return;
    }
    if (c == '`') {
      if (level.opened_by == Level::kBacktick && level.quoting == ShellQuoting::kNone) {
        levels_.pop_back();
      } else {
        levels_.push_back({ShellQuoting::kNone, Level::kBacktick});
      }
      return;
    }
    if (level.quoting == ShellQuoting::kDouble) {
      if (c == '"') level.quoting = ShellQuoting::kNone;
      return;
    }
    if (c == '\'') level.quoting = ShellQuoting::kSingle;
    if (c == '"') level.quoting = ShellQuoting::kDouble;
    if (level.opened_by != Level::kParen) return;
    if (c == '(') ++level.parens;  // $((1+2)), a subshell inside
    if (c == ')' && level.parens-- == 0) levels_.pop_back();
  }

 private:
  struct Level {
    ShellQuoting quoting;
    enum { kTop, kParen, kBacktick } opened_by;
    int parens = 0;  // open ( inside a $( level
  };
  std::vector<Level> levels_{{ShellQuoting::kNone, Level::kTop}};
};

// `shell`: each value is quoted for where its placeholder stands in a
// shell command; else written as it is.
std::string SubstituteWith(const std::string& arg, const TrialParams& params, bool shell) {
  std::string out;
  ShellQuotes quotes;
  for (size_t pos = 0; pos < arg.size(); ++pos) {
    size_t n = PlaceholderAt(arg, pos);
    auto it = n ? params.find(arg.substr(pos + 1, n)) : params.end();
    if (it != params.end()) {
      std::string value = Unquoted(it->second);
      if (shell) {
        value = QuotedFor(value, quotes.quoting());
        for (int level = 0; level < quotes.backticks(); ++level) {
          std::string escaped;
          for (char v : value) {
            if (v == '\\' || v == '`' || v == '$') escaped += '\\';
            escaped += v;
          }
          value = std::move(escaped);
        }
      }
      out += value;
      pos += n + 1;
      continue;
    }
    const size_t from = pos;
    if (shell) quotes.Read(arg, &pos);
    out.append(arg, from, pos - from + 1);
  }
  return out;
}

}  // namespace

std::string Substitute(const std::string& arg, const TrialParams& params) {
  return SubstituteWith(arg, params, /*shell=*/false);
}

std::string SubstituteInShell(const std::string& command, const TrialParams& params) {
  return SubstituteWith(command, params, /*shell=*/true);
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
    if (d.name().empty() || !IsIdentifierChar(d.name()[0])) return Invalid(key, "a parameter needs a name of letters, digits and _");
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
  return Status::Ok();
}

Result<JobSpec> TrialSpec(const JobSpec& sweep_spec, const std::string& sweep_id, int64_t index) {
  JobSpec spec = sweep_spec;
  const TrialParams params = SampleTrial(sweep_spec.tune(), index);
  spec.clear_tune();
  spec.set_name(fmt::format("{}-trial-{:03d}", sweep_spec.name(), index));
  auto* argv = spec.mutable_entrypoint();
  // A string entrypoint is shell code (JobSpecFromYaml makes it sh -c):
  // its values are quoted for the shell, not pasted into the command.
  const bool shell = argv->size() == 3 && argv->Get(0) == "/bin/sh" && argv->Get(1) == "-c";
  for (int i = 0; i < argv->size(); ++i) {
    std::string& arg = *argv->Mutable(i);
    arg = shell && i == 2 ? SubstituteInShell(arg, params) : Substitute(arg, params);
  }
  ASSIGN_OR_RETURN(*spec.mutable_config_json(), MergeConfig(sweep_spec.config_json(), params));
  spec.set_sweep_id(sweep_id);
  spec.set_trial_index(static_cast<int32_t>(index));
  for (const auto& [name, json] : params) (*spec.mutable_trial_params())[name] = json;
  return spec;
}

}  // namespace clusterd
