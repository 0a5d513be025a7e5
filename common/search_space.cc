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
#include <cstring>
#include <deque>
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

// Where a placeholder stands in a shell command, as a POSIX shell reads it.
enum class ShellContext {
  kUnquoted,       // its expansion would be split into words and globbed
  kSingle,         // '...': nothing expands
  kDouble,         // "...", or ${...} inside them: expands, not split
  kHereDoc,        // the text of a here-document whose delimiter is unquoted
  kQuotedHereDoc,  // ... whose delimiter is quoted: nothing expands
  kHereDocWord,    // the delimiter itself, which is not expanded
  kComment,
  kArithmetic,     // $((...)): expands, then is evaluated
};

struct HereDoc {
  std::string delimiter;
  bool quoted = false;
  bool strip_tabs = false;  // <<-
};

// One nesting of the command as the shell reads it (POSIX 2.2, 2.3, 2.6.3,
// 2.7.4): the whole command, and in it $(...), `...`, $((...)) and ${...},
// each read afresh whatever quotes they stand in. A wrong guess here can
// only give a wrong value, never have the shell run one: what is written
// for a placeholder is a variable reference whichever context it is
// written for, and the shell does not read an expansion's result as code.
struct ShellLevel {
  enum Opener { kTop, kParen, kBacktick, kArith, kBrace } opener;
  enum Mode { kNone, kSingle, kDouble, kHereDoc, kComment } mode = kNone;
  bool brace_in_quotes = false;  // a ${...} in "..." or a here-document: its quotes do not nest
  bool word_start = true;        // the next character starts a word (for # and case/esac)
  bool line_start = false;       // kHereDoc: at the start of a line of its text
  int parens = 0;                // ( open inside $( or $((
  int cases = 0;                 // case ... esac open inside $(: its pattern's ) closes nothing
  std::deque<HereDoc> here_docs; // waiting for the next newline; the front is the one being read
};

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool EndsWord(char c) { return IsBlank(c) || c == '\n' || (c != '\0' && std::strchr(";&|()<>", c) != nullptr); }

bool KeywordAt(const std::string& s, size_t pos, const char* word) {
  const size_t n = std::strlen(word);
  return s.compare(pos, n, word) == 0 && (pos + n == s.size() || EndsWord(s[pos + n]));
}

// `command` with each placeholder replaced by what `replace` returns for its
// name and context; the rest copied as it is.
using Replacer = std::function<Result<std::string>(const std::string& name, ShellContext context)>;

Result<std::string> RewriteShell(const std::string& s, const Replacer& replace) {
  std::string out;
  std::vector<ShellLevel> levels{ShellLevel{ShellLevel::kTop}};
  size_t pos = 0;
  auto copy = [&](size_t n) {
    n = std::min(n, s.size() - pos);
    out.append(s, pos, n);
    pos += n;
  };
  // $((, $(, ${ or `: a new level; else false.
  auto open = [&](const ShellLevel& level) {
    const bool quoted =
        level.mode == ShellLevel::kDouble || level.mode == ShellLevel::kHereDoc || level.brace_in_quotes;
    if (s.compare(pos, 3, "$((") == 0) {
      copy(3);
      levels.push_back(ShellLevel{ShellLevel::kArith});
    } else if (s.compare(pos, 2, "$(") == 0) {
      copy(2);
      levels.push_back(ShellLevel{ShellLevel::kParen});
    } else if (s.compare(pos, 2, "${") == 0) {
      copy(2);
      ShellLevel brace{ShellLevel::kBrace};
      brace.brace_in_quotes = quoted;
      levels.push_back(brace);
    } else if (s[pos] == '`') {
      copy(1);
      levels.push_back(ShellLevel{ShellLevel::kBacktick});
    } else {
      return false;
    }
    return true;
  };
  auto close = [&](size_t n) {
    copy(n);
    levels.pop_back();
    levels.back().word_start = false;
  };

  while (pos < s.size()) {
    ShellLevel& level = levels.back();
    const char c = s[pos];

    if (level.mode == ShellLevel::kHereDoc && level.line_start) {
      level.line_start = false;
      const HereDoc& doc = level.here_docs.front();
      const size_t eol = std::min(s.find('\n', pos), s.size());
      size_t from = pos;
      if (doc.strip_tabs) while (from < eol && s[from] == '\t') ++from;
      if (s.compare(from, eol - from, doc.delimiter) == 0) {
        copy(eol - pos + 1);
        level.here_docs.pop_front();
        if (level.here_docs.empty()) {
          level.mode = ShellLevel::kNone;
          level.word_start = true;
        } else {
          level.line_start = true;
        }
        continue;
      }
    }

    if (const size_t n = PlaceholderAt(s, pos)) {
      ShellContext context = ShellContext::kUnquoted;
      switch (level.mode) {
        case ShellLevel::kSingle: context = ShellContext::kSingle; break;
        case ShellLevel::kDouble: context = ShellContext::kDouble; break;
        case ShellLevel::kComment: context = ShellContext::kComment; break;
        case ShellLevel::kHereDoc:
          context = level.here_docs.front().quoted ? ShellContext::kQuotedHereDoc : ShellContext::kHereDoc;
          break;
        case ShellLevel::kNone:
          if (level.opener == ShellLevel::kArith) context = ShellContext::kArithmetic;
          if (level.brace_in_quotes) context = ShellContext::kDouble;
          break;
      }
      ASSIGN_OR_RETURN(std::string text, replace(s.substr(pos + 1, n), context));
      out += text;
      pos += n + 2;
      level.word_start = false;
      continue;
    }

    // Backquoted text ends at the first unescaped ` whatever it holds.
    if (c == '`' && level.opener == ShellLevel::kBacktick) {
      close(1);
      continue;
    }

    switch (level.mode) {
      case ShellLevel::kComment:
        if (c == '\n') {
          level.mode = ShellLevel::kNone;
          continue;  // the newline as a newline: it may start here-documents
        }
        copy(1);
        continue;
      case ShellLevel::kSingle:
        if (c == '\'') level.mode = ShellLevel::kNone;
        copy(1);
        continue;
      case ShellLevel::kDouble:
        if (c == '\\') {
          copy(2);
        } else if (c == '"') {
          level.mode = ShellLevel::kNone;
          copy(1);
        } else if (!open(level)) {
          copy(1);
        }
        continue;
      case ShellLevel::kHereDoc:
        if (level.here_docs.front().quoted) {
          if (c == '\n') level.line_start = true;
          copy(1);
        } else if (c == '\\') {
          // Only \$ \` \\ and \newline escape there; a backslash before
          // anything else is text.
          const char next = pos + 1 < s.size() ? s[pos + 1] : '\0';
          copy(next == '$' || next == '`' || next == '\\' || next == '\n' ? 2 : 1);
        } else if (c == '\n') {
          level.line_start = true;
          copy(1);
        } else if (!open(level)) {
          copy(1);
        }
        continue;
      case ShellLevel::kNone:
        break;
    }

    // Outside quotes.
    const bool was_word_start = level.word_start;
    level.word_start = EndsWord(c);
    if (c == '\\') {
      copy(2);
      continue;
    }
    if (!level.brace_in_quotes && c == '\'') {
      level.mode = ShellLevel::kSingle;
      copy(1);
      continue;
    }
    if (!level.brace_in_quotes && c == '"') {
      level.mode = ShellLevel::kDouble;
      copy(1);
      continue;
    }
    if (open(level)) continue;
    switch (level.opener) {
      case ShellLevel::kBrace:
        if (c == '}') {
          close(1);
          continue;
        }
        break;
      case ShellLevel::kArith:
        if (c == '(') ++level.parens;
        if (c == ')' && level.parens == 0 && s.compare(pos, 2, "))") == 0) {
          close(2);
          continue;
        }
        if (c == ')') --level.parens;
        break;
      case ShellLevel::kParen:
        if (c == '(') ++level.parens;
        if (c == ')') {
          if (level.parens > 0) {
            --level.parens;
          } else if (level.cases == 0) {
            close(1);
            continue;
          }
        }
        if (was_word_start && KeywordAt(s, pos, "case")) ++level.cases;
        if (was_word_start && KeywordAt(s, pos, "esac") && level.cases > 0) --level.cases;
        [[fallthrough]];
      case ShellLevel::kTop:
      case ShellLevel::kBacktick:
        if (c == '#' && was_word_start) {
          level.mode = ShellLevel::kComment;
          copy(1);
          continue;
        }
        if (c == '\n' && !level.here_docs.empty()) {
          level.mode = ShellLevel::kHereDoc;
          level.line_start = true;
          copy(1);
          continue;
        }
        if (s.compare(pos, 2, "<<") == 0) {
          copy(2);
          if (pos < s.size() && s[pos] == '<') {  // bash's <<< word: no here-document
            copy(1);
            continue;
          }
          HereDoc doc;
          if (pos < s.size() && s[pos] == '-') {
            doc.strip_tabs = true;
            copy(1);
          }
          while (pos < s.size() && IsBlank(s[pos])) copy(1);
          // The delimiter: the word with its quotes taken off; any quote
          // makes the text literal.
          while (pos < s.size() && !EndsWord(s[pos]) && !(s[pos] == '`' && level.opener == ShellLevel::kBacktick)) {
            if (const size_t n = PlaceholderAt(s, pos)) {
              ASSIGN_OR_RETURN(std::string text, replace(s.substr(pos + 1, n), ShellContext::kHereDocWord));
              out += text;
              pos += n + 2;
              continue;
            }
            const char q = s[pos];
            if (q == '\\') {
              doc.quoted = true;
              if (pos + 1 < s.size()) doc.delimiter += s[pos + 1];
              copy(2);
            } else if (q == '\'' || q == '"') {
              doc.quoted = true;
              copy(1);
              while (pos < s.size() && s[pos] != q) {
                if (q == '"' && s[pos] == '\\' && pos + 1 < s.size()) copy(1);
                doc.delimiter += s[pos];
                copy(1);
              }
              copy(1);
            } else {
              doc.delimiter += q;
              copy(1);
            }
          }
          level.here_docs.push_back(std::move(doc));
          level.word_start = false;
          continue;
        }
        break;
    }
    copy(1);
  }
  return out;
}

// A number as JSON writes one: nothing arithmetic could evaluate further.
bool IsJsonNumber(const std::string& text) {
  static const std::regex kNumber("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?");
  return std::regex_match(text, kNumber);
}

bool IsVariableName(const std::string& name) {
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), IsIdentifierChar);
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
    if (IsVariableName(name)) env[ParamVariable(name)] = Unquoted(json);
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
