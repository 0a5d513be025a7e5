// The small parsers behind job files: numbers as YAML writes them, byte
// amounts ("4Gi"), durations ("10m") and the did-you-mean hint for typos.
// Pure functions, no YAML types, so the CLI can use them for flags too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace clusterd {

// A whole number as YAML 1.2 writes one: "42", "-7", "+3", "0x1F", "0o17".
// nullopt when the text is not one or does not fit in 64 bits.
std::optional<int64_t> ParseInteger(std::string_view text);
// A finite decimal number: "1", "-2.5", ".5", "1e3". No "inf" or "nan":
// a resource or a timeout of infinity is a mistake, not a value.
std::optional<double> ParseDecimal(std::string_view text);

// Bytes from a number ("1073741824") or a number and a unit: binary
// Ki/Mi/Gi/Ti/Pi (x1024) or decimal K/M/G/T/P (x1000), an optional
// trailing "B" ("4GiB", "2GB"), any case, optional space ("1.5 Gi").
Result<double> ParseMemory(std::string_view text);
// Seconds from a number ("90", "1.5") or number-unit pairs with units
// ms, s, m, h, d: "90s", "10m", "2h", "1h30m".
Result<double> ParseDuration(std::string_view text);

// The offset of the first byte that keeps `text` from being UTF-8 text
// (a NUL or other control character but tab/CR/LF, or a malformed UTF-8
// sequence), or nullopt when it is text.
std::optional<size_t> FindNonText(std::string_view text);

// Levenshtein distance, comparing ASCII letters case-insensitively.
int EditDistance(std::string_view a, std::string_view b);
// The candidate closest to `word` when it is close enough to be a typo
// (distance <= 2, <= 1 for words of up to four letters); "" when none is.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace clusterd
