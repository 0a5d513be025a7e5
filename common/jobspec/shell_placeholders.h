// `{name}` placeholders in a job's entrypoint, and where each one stands in
// a command a POSIX shell runs (sh -c), as the shell reads it: a sweep's
// values reach a string entrypoint as environment variables, and each
// placeholder becomes a reference written for its context
// (search_space.h's SubstituteInShell). Pure functions.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "common/status.h"

namespace clusterd {

// "{name}" at `pos` of `arg` (not "${name}"): the name's length, or 0 when
// no placeholder starts there. A name is letters, digits and '_', not
// starting with a digit.
size_t PlaceholderAt(const std::string& arg, size_t pos);
// Whether `name` is one a placeholder may have (it is a shell variable name too).
bool IsPlaceholderName(const std::string& name);

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

// `command` with each placeholder replaced by what `replace` returns for its
// name and context; the rest copied as it is. An error `replace` returns
// is the result.
using Replacer = std::function<Result<std::string>(const std::string& name, ShellContext context)>;
Result<std::string> RewriteShell(const std::string& command, const Replacer& replace);

}  // namespace clusterd
