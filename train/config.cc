// A reader of one JSON object's top level: enough for a job's config,
// without a JSON library (train/ links libtorch and nothing else).
#include "ctrain/config.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ctrain {

namespace {

class Reader {
 public:
  explicit Reader(const std::string& text) : s_(text) {}

  std::map<std::string, std::string> Object() {
    std::map<std::string, std::string> out;
    Skip();
    Expect('{');
    Skip();
    if (Peek() == '}') {
      ++i_;
      return End(out);
    }
    while (true) {
      Skip();
      std::string key = String();
      Skip();
      Expect(':');
      Skip();
      out[key] = Peek() == '"' ? String() : Raw();
      Skip();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      Expect('}');
      return End(out);
    }
  }

 private:
  std::map<std::string, std::string>& End(std::map<std::string, std::string>& out) {
    Skip();
    if (i_ != s_.size()) Fail("text after the object");
    return out;
  }
  [[noreturn]] void Fail(const std::string& what) const {
    throw std::runtime_error("ctrain: config is not a JSON object: " + what + " at offset " + std::to_string(i_));
  }
  char Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void Expect(char c) {
    if (Peek() != c) Fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string String() {
    Expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) break;
      char e = s_[i_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) Fail("a short \\u escape");
          unsigned code = static_cast<unsigned>(std::stoul(s_.substr(i_, 4), nullptr, 16));
          i_ += 4;
          // UTF-8 for the basic plane (surrogate pairs are kept as two halves).
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
          }
          break;
        }
        default: out += e;  // \" \\ \/
      }
    }
    Expect('"');
    return out;
  }
  // A number, literal, array or object, as written.
  std::string Raw() {
    const size_t start = i_;
    int depth = 0;
    bool in_string = false;
    for (; i_ < s_.size(); ++i_) {
      char c = s_[i_];
      if (in_string) {
        if (c == '\\') ++i_;
        else if (c == '"') in_string = false;
        continue;
      }
      if (c == '"') in_string = true;
      else if (c == '[' || c == '{') ++depth;
      else if (c == ']' || c == '}') {
        if (depth == 0) break;
        --depth;
      } else if (c == ',' && depth == 0) break;
    }
    std::string raw = s_.substr(start, i_ - start);
    while (!raw.empty() && std::isspace(static_cast<unsigned char>(raw.back()))) raw.pop_back();
    if (raw.empty()) Fail("a missing value");
    return raw;
  }

  const std::string& s_;
  size_t i_ = 0;
};

std::string ReadConfigText() {
  if (const char* env = std::getenv("CLUSTER_CONFIG")) return env;
  if (const char* path = std::getenv("CLUSTER_CONFIG_FILE")) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(std::string("ctrain: cannot read CLUSTER_CONFIG_FILE ") + path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  return "{}";
}

const std::string* Find(const std::string& key) {
  const auto& c = config();
  auto it = c.find(key);
  return it == c.end() ? nullptr : &it->second;
}

[[noreturn]] void WrongType(const std::string& key, const std::string& value, const char* what) {
  throw std::runtime_error("ctrain: config key '" + key + "': expected " + what + ", got '" + value + "'");
}

}  // namespace

std::map<std::string, std::string> parse_config(const std::string& json) { return Reader(json).Object(); }

const std::map<std::string, std::string>& config() {
  static const std::map<std::string, std::string> parsed = parse_config(ReadConfigText());
  return parsed;
}

double config_double(const std::string& key, double fallback) {
  const std::string* v = Find(key);
  if (!v) return fallback;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0') WrongType(key, *v, "a number");
  return x;
}

int64_t config_int(const std::string& key, int64_t fallback) {
  const std::string* v = Find(key);
  if (!v) return fallback;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || x != static_cast<double>(static_cast<int64_t>(x))) WrongType(key, *v, "an integer");
  return static_cast<int64_t>(x);
}

std::string config_string(const std::string& key, const std::string& fallback) {
  const std::string* v = Find(key);
  return v ? *v : fallback;
}

}  // namespace ctrain
