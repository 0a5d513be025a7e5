// Small text helpers shared by the daemon's parts.
#pragma once

#include <cstdint>
#include <string>

namespace clusterd {

// The last `lines` lines of `text` (a final newline does not start a new
// line). Safe on empty text and on text without newlines.
std::string LastLines(const std::string& text, int lines);

// `text` as a JSON string literal, quotes included, with every terminal
// control (HasTerminalControls) escaped as \uXXXX: how a message or a log
// line shows a name it did not choose. Whole JSON documents are written
// with nlohmann::json.
std::string JsonQuote(const std::string& text);

// `arg` as one word of a POSIX shell command: as it is when it holds only
// characters no shell treats specially, else in single quotes (Python's
// shlex.quote).
std::string ShellWord(const std::string& arg);

// Whether `text` holds what a terminal or a log acts on rather than shows:
// C0 controls and DEL, C1 controls (U+0080..U+009F), line and paragraph
// separators (U+2028, U+2029), the bidirectional marks, overrides and
// isolates (U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), which turn
// what follows them around.
bool HasTerminalControls(const std::string& text);

// "12 B", "4.0 KiB", "800.0 MiB", "2.3 GiB" (binary units, one decimal), for
// messages and tables: the one form every size is shown in.
std::string HumanBytes(uint64_t bytes);
// The same, but a whole number of units without decimals ("4 GiB", not
// "4.0 GiB"): for a size a user wrote, such as a limit.
std::string HumanBytesExact(uint64_t bytes);

// One field of a CSV row (RFC 4180): as it is, or in double quotes with each
// quote doubled when it holds a comma, a quote, CR or LF.
std::string CsvField(const std::string& text);

}  // namespace clusterd
