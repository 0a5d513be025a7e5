#include "common/jobspec/job_spec_units.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace clusterd {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Length of the longest prefix of `s` shaped like a decimal number
// ([+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?), 0 if none.
// Spelled out because strtod also takes "inf", hex floats and the locale's
// decimal point, none of which belong in a job file.
size_t DecimalPrefix(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    size_t exp_digits = 0;
    while (j < s.size() && IsDigit(s[j])) ++j, ++exp_digits;
    if (exp_digits > 0) i = j;
  }
  return i;
}

// Parses a prefix found by DecimalPrefix; from_chars refuses a leading '+'.
std::optional<double> ToDouble(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

// Splits "4Gi" into 4 and "Gi"; nullopt when it does not start with a number.
std::optional<std::pair<double, std::string_view>> SplitNumber(std::string_view s) {
  size_t n = DecimalPrefix(s);
  if (n == 0) return std::nullopt;
  auto value = ToDouble(s.substr(0, n));
  if (!value) return std::nullopt;
  return std::make_pair(*value, Trim(s.substr(n)));
}

std::optional<double> MemoryMultiplier(std::string_view unit) {
  std::string u = Lower(unit);
  if (u.size() > 1 && u.back() == 'b') u.pop_back();  // "GiB", "GB"
  if (u.empty() || u == "b") return 1.0;
  static const std::string kPrefixes = "kmgtp";
  size_t power = kPrefixes.find(u[0]);
  if (power == std::string::npos) return std::nullopt;
  if (u.size() == 1) return std::pow(1000.0, power + 1);
  if (u.size() == 2 && u[1] == 'i') return std::pow(1024.0, power + 1);
  return std::nullopt;
}

std::optional<double> DurationMultiplier(std::string_view unit) {
  if (unit == "ms") return 0.001;
  if (unit == "s") return 1.0;
  if (unit == "m") return 60.0;
  if (unit == "h") return 3600.0;
  if (unit == "d") return 86400.0;
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> ParseInteger(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    if (negative || s.data() != text.data()) return std::nullopt;  // YAML has no signed hex
    base = s[1] == 'x' ? 16 : 8;
    s.remove_prefix(2);
  }
  if (s.empty() || !std::isalnum(static_cast<unsigned char>(s.front()))) return std::nullopt;
  uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  const uint64_t limit = static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0);
  if (magnitude > limit) return std::nullopt;
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

std::optional<double> ParseDecimal(std::string_view text) {
  if (text.empty() || DecimalPrefix(text) != text.size()) return std::nullopt;
  return ToDouble(text);
}

Result<double> ParseMemory(std::string_view text) {
  auto split = SplitNumber(Trim(text));
  std::optional<double> multiplier;
  if (split) multiplier = MemoryMultiplier(split->second);
  if (!multiplier || split->first < 0 || !std::isfinite(split->first * *multiplier)) {
    return Status::InvalidArgument(fmt::format(
        "expected bytes as a number or a string like '4Gi', '512Mi', '2G', got '{}'", text));
  }
  return split->first * *multiplier;
}

Result<double> ParseDuration(std::string_view text) {
  const Status bad = Status::InvalidArgument(fmt::format(
      "expected seconds as a number or a string like '90s', '10m', '2h', '1h30m', got '{}'", text));
  std::string_view rest = Trim(text);
  if (auto plain = ParseDecimal(rest)) return *plain < 0 ? Result<double>(bad) : Result<double>(*plain);
  if (rest.empty()) return bad;
  double total = 0;
  while (!rest.empty()) {
    // Each part is a non-negative number then its unit, up to the next digit.
    if (rest.front() == '-' || rest.front() == '+') return bad;
    auto split = SplitNumber(rest);
    if (!split) return bad;
    std::string_view tail = split->second;
    size_t unit_len = 0;
    while (unit_len < tail.size() && std::isalpha(static_cast<unsigned char>(tail[unit_len]))) ++unit_len;
    auto multiplier = DurationMultiplier(tail.substr(0, unit_len));
    if (!multiplier) return bad;
    total += split->first * *multiplier;
    rest = Trim(tail.substr(unit_len));
  }
  return total;
}

namespace {

// Well-formed UTF-8 by lead byte (Unicode table 3-7): the sequence length
// and the range of the second byte, which excludes overlong forms,
// surrogates and code points above U+10FFFF.
struct Utf8Lead {
  unsigned char first_lo, first_hi;
  size_t length;
  unsigned char second_lo, second_hi;
};
constexpr Utf8Lead kUtf8Leads[] = {
    {0xC2, 0xDF, 2, 0x80, 0xBF}, {0xE0, 0xE0, 3, 0xA0, 0xBF}, {0xE1, 0xEC, 3, 0x80, 0xBF},
    {0xED, 0xED, 3, 0x80, 0x9F}, {0xEE, 0xEF, 3, 0x80, 0xBF}, {0xF0, 0xF0, 4, 0x90, 0xBF},
    {0xF1, 0xF3, 4, 0x80, 0xBF}, {0xF4, 0xF4, 4, 0x80, 0x8F},
};

// Bytes in the multi-byte UTF-8 sequence at `s[i]`, or 0 when malformed.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  for (const auto& lead : kUtf8Leads) {
    if (byte(i) < lead.first_lo || byte(i) > lead.first_hi) continue;
    if (i + lead.length > s.size() || byte(i + 1) < lead.second_lo || byte(i + 1) > lead.second_hi) return 0;
    for (size_t k = 2; k < lead.length; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) return 0;
    }
    return lead.length;
  }
  return 0;
}

}  // namespace

std::optional<size_t> FindNonText(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) return i;
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(text, i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

int EditDistance(std::string_view a, std::string_view b) {
  const std::string x = Lower(a), y = Lower(b);
  // One row of the classic table at a time.
  std::vector<int> row(y.size() + 1);
  for (size_t j = 0; j <= y.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= x.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= y.size(); ++j) {
      int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (x[i - 1] == y[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[y.size()];
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  const int limit = word.size() <= 4 ? 1 : 2;
  std::string best;
  int best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    int d = EditDistance(word, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace clusterd
