// The `tune:` section of a job file (see search_space.h for what it means):
// parsed with file:line:col and key in every error, as the rest of the job
// file. Internal to job_spec.
#pragma once

#include "cluster.pb.h"
#include "common/jobspec/job_spec_yaml.h"
#include "common/status.h"

namespace clusterd::job_spec_internal {

// Fills `tune` from the section; defaults for what it leaves out.
Status ParseTune(const Field& field, TuneSpec* tune);

// With a tune section: refuses a `{name}` placeholder in the entrypoint that
// names no parameter, at the entrypoint argument that holds it.
Status CheckEntrypointPlaceholders(const Field& entrypoint, const JobSpec& spec);

}  // namespace clusterd::job_spec_internal
