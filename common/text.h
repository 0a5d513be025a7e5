// Small text helpers shared by the daemon's parts.
#pragma once

#include <cstdint>
#include <string>

namespace clusterd {

// The last `lines` lines of `text` (a final newline does not start a new
// line). Safe on empty text and on text without newlines.
std::string LastLines(const std::string& text, int lines);

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(const std::string& text);

// `arg` as one word of a POSIX shell command: as it is when it holds only
// characters no shell treats specially, else in single quotes (Python's
// shlex.quote).
std::string ShellWord(const std::string& arg);

// "12 B", "4.0 KiB", "800.0 MiB", "2.3 GiB" (binary units, one decimal), for messages.
std::string HumanBytes(uint64_t bytes);

}  // namespace clusterd
