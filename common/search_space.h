// A sweep's trials from its TuneSpec: how many there are, each one's
// parameters (reproducible from the seed), and how those reach the ranks:
// merged over the job's `config` and substituted into `{name}` placeholders
// of the entrypoint. Pure functions; no exception leaves them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd {

// Parameter name -> its value as JSON text ("0.0031", "64", "\"adam\"").
using TrialParams = std::map<std::string, std::string>;

inline constexpr int64_t kMaxTrials = 10000;

// num_samples x the product of every grid's size (as Ray's num_samples).
int64_t TrialCount(const TuneSpec& tune);

// The parameters of trial `index` (0 <= index < TrialCount): grid values
// cycle fastest, so trials 0..G-1 are the first draw over every grid
// combination. Random values come from (seed, index) alone, so a trial's
// values do not depend on which others were sampled. loguniform and uniform
// draw from [low, high); randint from the integers in [low, high), as Ray's.
TrialParams SampleTrial(const TuneSpec& tune, int64_t index);

// The `{name}` placeholders in one argument, in order; `${VAR}` (a shell
// variable) is not one.
std::vector<std::string> Placeholders(const std::string& arg);
// The argument with each placeholder replaced by its value (a JSON string
// without its quotes). REQUIRES: every placeholder names a parameter.
std::string Substitute(const std::string& arg, const TrialParams& params);
// The same for a command a POSIX shell runs (a string entrypoint, sh -c):
// each value is quoted for where its placeholder stands, outside quotes,
// inside '...' or inside "...", so that it reaches the program as one
// word, exactly, whatever characters it holds.
std::string SubstituteInShell(const std::string& command, const TrialParams& params);

// The job's config (a JSON object, "" for none) with the parameters set over it.
Result<std::string> MergeConfig(const std::string& config_json, const TrialParams& params);

// The checks the parser makes with file positions, for a spec from the
// wire; messages name the key: "key 'tune.search_space.lr': ...".
Status ValidateTuneSpec(const JobSpec& spec);
// A placeholder of the entrypoint that names no parameter: InvalidArgument
// naming it and its argument; OK otherwise.
Status CheckPlaceholders(const JobSpec& spec);

// The spec of trial `index` of a sweep: the tune section dropped, its
// parameters in config and entrypoint, its name "<name>-trial-<index>".
Result<JobSpec> TrialSpec(const JobSpec& sweep_spec, const std::string& sweep_id, int64_t index);

}  // namespace clusterd
