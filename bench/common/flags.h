// The benchmarks' command line: "--flag value" pairs, where --only takes a
// comma-separated list of parts, numbers must be > 0, and strings any value.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace clusterd::bench {

// False on an unknown flag, a missing value or a number <= 0.
bool ParseFlags(int argc, char** argv, std::set<std::string>* parts, const std::map<std::string, int*>& numbers,
                const std::map<std::string, std::string*>& strings = {});

// "1000,10000" -> {1000, 10000} (what atoi makes of each item).
std::vector<int> ParseNumberList(const std::string& text);

}  // namespace clusterd::bench
