// A job file's text as one YAML document: read with a size cap, checked
// to be text, loaded without yaml-cpp's endless loops, --set overrides
// applied. Internal to job_spec; errors point at the file's line.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/jobspec/job_spec_yaml.h"
#include "common/status.h"

namespace clusterd::job_spec_internal {

// The file's bytes, refusing a folder, or more than kMaxJobFileBytes
// without reading them all.
Result<std::string> ReadCapped(const std::string& path);

// Refuses what would only confuse yaml-cpp: oversize, binary, not UTF-8.
Status CheckIsText(const std::string& text, const Locator& loc);

// The file's one document as a map, with the overrides applied; refuses a
// second document, and input the parser is stuck on.
Result<YAML::Node> LoadTree(const std::string& text, const Locator& loc, const std::vector<Override>& overrides);

}  // namespace clusterd::job_spec_internal
