// `clusterd stop`: ends every clusterd this machine started (found by the
// pid files of the session folders) and returns only when they are gone.
#pragma once

#include <string>
#include <vector>

namespace clusterd {

int StopCommand(const std::vector<std::string>& args);

}  // namespace clusterd
