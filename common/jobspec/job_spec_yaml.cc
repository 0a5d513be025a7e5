#include "common/jobspec/job_spec_yaml.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/jobspec/job_spec_checks.h"
#include "common/jobspec/job_spec_units.h"

namespace clusterd::job_spec_internal {

namespace {

// Long values are cut in messages: the point is to recognise them.
constexpr size_t kMaxQuotedLength = 60;
// Deeper `config` nesting is refused; anchors can even make a cycle.
constexpr int kMaxJsonDepth = 64;

std::string Quote(const std::string& text) {
  if (text.size() <= kMaxQuotedLength) return "'" + text + "'";
  return "'" + text.substr(0, kMaxQuotedLength) + "...'";
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return Quote(node.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    default: return "nothing";
  }
}

// True when `path` is `prefix` or lies under it ("env.FOO" under "env",
// "entrypoint[1]" under "entrypoint").
bool IsUnder(const std::string& path, const std::string& prefix) {
  if (path.compare(0, prefix.size(), prefix) != 0) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '.' || path[prefix.size()] == '[';
}

using Json = nlohmann::ordered_json;  // keys in the file's order

// A plain scalar's JSON value under YAML 1.2's core schema, nullopt for a
// string. Fails only for .inf and .nan, which JSON cannot hold.
Result<std::optional<Json>> PlainScalarJson(const std::string& s) {
  static const char* kBools[] = {"true", "True", "TRUE", "false", "False", "FALSE"};
  for (const char* b : kBools) {
    if (s == b) return std::optional<Json>(s[0] == 't' || s[0] == 'T');
  }
  if (auto i = ParseInteger(s)) return std::optional<Json>(*i);
  // A float stays a float: nlohmann writes 2.0, never the integer 2.
  if (auto d = ParseDecimal(s)) return std::optional<Json>(*d);
  std::string lower = s;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == ".inf" || lower == "+.inf" || lower == "-.inf" || lower == ".nan") {
    return Status::InvalidArgument(
        fmt::format("JSON has no infinity or NaN, got '{}' (quote it to pass a string)", s));
  }
  return std::optional<Json>();
}

// `value` as JSON text; bytes that are not UTF-8 become U+FFFD rather
// than an exception.
std::string Dump(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

// The YAML under a field as a JSON tree. The size of its JSON text is
// counted as the tree grows, so that anchors that expand a small file past
// kMaxConfigJsonBytes are refused before they fill memory.
class JsonBuilder {
 public:
  Result<Json> Build(const Field& field, int depth) {
    if (depth > kMaxJsonDepth) return field.Error(fmt::format("nested more than {} levels deep", kMaxJsonDepth));
    const YAML::Node& node = field.node();
    Result<Json> value = Json();
    if (node.IsMap()) {
      value = BuildMap(field, depth);
    } else if (node.IsSequence()) {
      value = BuildList(field, depth);
    } else if (!node.IsScalar()) {
      bytes_ += 4;  // null
    } else {
      value = BuildScalar(field);
    }
    if (!value.ok()) return value;
    if (bytes_ > kMaxConfigJsonBytes) {
      return field.Error(fmt::format("expands to more than {} bytes of JSON", kMaxConfigJsonBytes));
    }
    return value;
  }

 private:
  Result<Json> BuildMap(const Field& field, int depth) {
    Json map = Json::object();
    ++bytes_;  // {
    RETURN_IF_ERROR(ForEachEntry(field, nullptr, [&](const std::string& key, const Field& value) {
      if (!map.empty()) ++bytes_;  // ,
      bytes_ += Dump(Json(key)).size() + 1;  // "key":
      ASSIGN_OR_RETURN(map[key], Build(value, depth + 1));
      return Status::Ok();
    }));
    ++bytes_;  // }
    return map;
  }

  Result<Json> BuildList(const Field& field, int depth) {
    Json list = Json::array();
    ++bytes_;  // [
    RETURN_IF_ERROR(ForEachItem(field, [&](const Field& item) {
      if (!list.empty()) ++bytes_;  // ,
      ASSIGN_OR_RETURN(Json value, Build(item, depth + 1));
      list.push_back(std::move(value));
      return Status::Ok();
    }));
    ++bytes_;  // ]
    return list;
  }

  // Quoted scalars ("!" tag) and !!str are strings; plain ones are typed.
  Result<Json> BuildScalar(const Field& field) {
    const YAML::Node& node = field.node();
    Json value = node.Scalar();
    if (node.Tag() != "!" && node.Tag() != "tag:yaml.org,2002:str") {
      auto plain = PlainScalarJson(node.Scalar());
      if (!plain.ok()) return field.Error(plain.status().message());
      if (plain->has_value()) value = std::move(**plain);
    }
    bytes_ += Dump(value).size();
    return value;
  }

  size_t bytes_ = 0;
};

}  // namespace

Result<Override> ParseOverride(const std::string& text) {
  const auto fail = [&](const std::string& why) {
    return Status::InvalidArgument(fmt::format("--set {}: {}", text, why));
  };
  if (auto bad = FindNonText(text)) return fail(fmt::format("byte {} is not UTF-8 text", *bad));
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return fail("expected key=value, like --set num_workers=4");
  Override o;
  o.text = text;
  o.path = text.substr(0, eq);
  for (size_t start = 0;;) {
    size_t dot = o.path.find('.', start);
    o.keys.push_back(o.path.substr(start, dot - start));
    if (o.keys.back().empty()) return fail(fmt::format("'{}' has an empty part; expected a key like env.FOO", o.path));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  try {
    o.value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    return fail(fmt::format("the value is not valid YAML: {} at column {}", e.msg, e.mark.column + 1));
  }
  return o;
}

Status ApplyOverride(const Override& o, YAML::Node* root) {
  // reset() rebinds a handle; `=` would overwrite the node it points to.
  YAML::Node map;
  map.reset(*root);
  const YAML::Node& view = map;  // const lookups: looking must not insert
  std::string path;
  for (size_t i = 0; i + 1 < o.keys.size(); ++i) {
    const std::string& key = o.keys[i];
    path += (i ? "." : "") + key;
    const YAML::Node existing = view[key];
    if (!existing.IsDefined() || existing.IsNull()) {
      map[key] = YAML::Node(YAML::NodeType::Map);
    } else if (!existing.IsMap()) {
      return Status::InvalidArgument(fmt::format("--set {}: key '{}' is {}, not a map to set '{}' in", o.text, path,
                                                 Describe(existing), o.keys[i + 1]));
    }
    map.reset(view[key]);
  }
  map[o.keys.back()] = o.value;
  return Status::Ok();
}

const Override* Locator::OverrideFor(const std::string& path) const {
  // The last override that wrote this key, a key under it, or the map
  // holding it (an override can create the maps on its path).
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    if (IsUnder(path, it->path) || IsUnder(it->path, path)) return &*it;
  }
  return nullptr;
}

std::string Locator::Where(const YAML::Mark& mark, const Override* override) const {
  if (override != nullptr) return "--set " + override->text;
  if (mark.is_null()) return file_name_;
  return fmt::format("{}:{}:{}", file_name_, mark.line + 1, mark.column + 1);
}

Status Locator::Error(const YAML::Mark& mark, const std::string& path, const std::string& message) const {
  const Override* override = OverrideFor(path);
  if (path.empty() || (override != nullptr && override->path == path)) {
    return Status::InvalidArgument(fmt::format("{}: {}", Where(mark, override), message));
  }
  return Status::InvalidArgument(fmt::format("{}: key '{}': {}", Where(mark, override), path, message));
}

Status Locator::ErrorNoKey(const YAML::Mark& mark, const std::string& path, const std::string& message) const {
  return Status::InvalidArgument(fmt::format("{}: {}", Where(mark, OverrideFor(path)), message));
}

Status Locator::FileError(const std::string& message) const {
  return Status::InvalidArgument(fmt::format("{}: {}", file_name_, message));
}

Field Field::Child(const YAML::Node& key, const YAML::Node& value) const {
  std::string path = path_.empty() ? key.Scalar() : path_ + "." + key.Scalar();
  return Field(locator_, value, std::move(path), key.Mark());
}

Field Field::Item(size_t index, const YAML::Node& value) const {
  return Field(locator_, value, fmt::format("{}[{}]", path_, index), value.Mark());
}

YAML::Mark Field::ErrorMark() const {
  return node_.IsDefined() && !node_.IsNull() ? node_.Mark() : key_mark_;
}

Status Field::Error(const std::string& message) const { return locator_->Error(ErrorMark(), path_, message); }

Status Field::TypeError(const std::string& what) const {
  return Error(fmt::format("expected {}, got {}", what, Describe(node_)));
}

Status Field::Check(const Status& status) const { return status.ok() ? status : Error(status.message()); }

Status Field::CheckKey(const Status& status) const {
  return status.ok() ? status : locator_->Error(key_mark_, path_, status.message());
}

Result<std::string> ReadString(const Field& field) {
  if (!field.node().IsScalar()) return field.TypeError("a string");
  RETURN_IF_ERROR(field.Check(CheckText(field.node().Scalar())));
  return field.node().Scalar();
}

Result<int64_t> ReadInteger(const Field& field) {
  if (!field.node().IsScalar()) return field.TypeError("an integer");
  const std::string& text = field.node().Scalar();
  if (auto i = ParseInteger(text)) return *i;
  // Whole numbers written as floats ("1e3", "4.0") are integers too.
  auto d = ParseDecimal(text);
  if (!d || *d != std::floor(*d)) return field.TypeError("an integer");
  if (std::fabs(*d) >= 9223372036854775808.0) return field.Error(fmt::format("{} is too large", Describe(field.node())));
  return static_cast<int64_t>(*d);
}

Result<double> ReadNumber(const Field& field) {
  if (!field.node().IsScalar()) return field.TypeError("a number");
  const std::string& text = field.node().Scalar();
  if (auto d = ParseDecimal(text)) return *d;
  if (auto i = ParseInteger(text)) return static_cast<double>(*i);
  return field.TypeError("a number");
}

Status ForEachEntry(const Field& map, const std::vector<std::string>* known, const EntryFn& fn) {
  const YAML::Node& node = map.node();
  if (node.IsNull()) return Status::Ok();  // "env:" with every entry commented out
  if (!node.IsMap()) return map.TypeError("a map");
  std::map<std::string, int> first_line;
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies: the iterator hands out a proxy that dies with the statement.
    const YAML::Node key = it->first;
    if (!key.IsScalar()) return map.locator().Error(key.Mark(), map.path(), "a key must be a plain name, got " + Describe(key));
    Field value = map.Child(key, it->second);
    auto [seen, inserted] = first_line.emplace(key.Scalar(), key.Mark().line + 1);
    if (!inserted) {
      return map.locator().ErrorNoKey(key.Mark(), value.path(),
                                      fmt::format("duplicate key '{}' (first at line {})", value.path(), seen->second));
    }
    if (known != nullptr && std::find(known->begin(), known->end(), key.Scalar()) == known->end()) {
      std::string hint = DidYouMean(key.Scalar(), *known);
      std::string prefix = map.path().empty() ? "" : map.path() + ".";
      std::string why = hint.empty() ? fmt::format("known keys: {}", fmt::join(*known, ", "))
                                     : fmt::format("did you mean '{}{}'?", prefix, hint);
      return map.locator().ErrorNoKey(key.Mark(), value.path(), fmt::format("unknown key '{}' ({})", value.path(), why));
    }
    RETURN_IF_ERROR(fn(key.Scalar(), value));
  }
  return Status::Ok();
}

Status ForEachItem(const Field& list, const std::function<Status(const Field& item)>& fn) {
  const YAML::Node& node = list.node();
  if (node.IsNull()) return Status::Ok();
  if (!node.IsSequence()) return list.TypeError("a list");
  size_t index = 0;
  for (const YAML::Node item : node) RETURN_IF_ERROR(fn(list.Item(index++, item)));
  return Status::Ok();
}

Result<std::string> ToJson(const Field& field) {
  ASSIGN_OR_RETURN(Json json, JsonBuilder().Build(field, 0));
  return Dump(json);
}

}  // namespace clusterd::job_spec_internal
