// Git's wildmatch with pathname semantics: the glob language of .gitignore,
// and so of a job's `excludes:` and .clusterignore files.
#pragma once

#include <string_view>

namespace clusterd {

// True when `text` (a '/'-separated relative path, or a single name) matches
// `pattern` in full.
//   *  ?  [a-z] [!x] [^x] [[:alpha:]]   never match '/'
//   \c                                  the character c itself
//   **  between slashes or at an end    any number of whole folders:
//       "**/x" (x at any depth), "x/**" (all inside x), "a/**/b" (a/b, a/x/y/b)
//   **  elsewhere                       the same as *
// A malformed pattern (a trailing '\', an unclosed '[') matches nothing.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace clusterd
