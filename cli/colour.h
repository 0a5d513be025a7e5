// Colour in clusterctl's tables: only on a terminal, and never when
// NO_COLOR is set to anything (https://no-color.org).
#pragma once

#include <string>

namespace clusterd::cli {

bool UseColour(int fd);

// Node and job states in `text` (whole upper-case words such as ALIVE,
// FAILED) wrapped in ANSI colours: green for good, red for bad, yellow for
// waiting, cyan for running. Applied after a table is aligned, so the
// invisible escapes do not shift its columns.
std::string ColourStates(const std::string& text);

// What a command prints on stdout: coloured when UseColour(stdout).
std::string ForStdout(const std::string& text);

}  // namespace clusterd::cli
