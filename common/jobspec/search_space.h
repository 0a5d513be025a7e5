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
// A string entrypoint (JobSpecFromYaml's ["/bin/sh", "-c", command]).
bool IsShellEntrypoint(const JobSpec& spec);
// The environment variable that holds parameter `name` in each rank of a
// trial: CLUSTER_PARAM_<name>. Every placeholder's name is a valid variable
// name (letters, digits and _, not starting with a digit), so the mapping is
// one to one.
std::string ParamVariable(const std::string& name);
// The variables of a trial's parameters (its trial_params): each value as
// Substitute writes it. A name no placeholder can take (Python's
// "model/lr") gets none.
std::map<std::string, std::string> TrialEnvironment(const JobSpec& trial);
// The same as Substitute for a command a POSIX shell runs (sh -c): no value
// is written into the command. Each placeholder becomes a reference to its
// parameter's variable (TrialEnvironment), written for where it stands so
// that the shell expands it to exactly the value, as one word where the
// placeholder was one, and never reads the value as code:
//   outside quotes          {lr} -> "${CLUSTER_PARAM_lr}"
//   in "...", an unquoted here-document's text, $((...)) -> ${CLUSTER_PARAM_lr}
//   in '...'                '{lr}' -> ''"${CLUSTER_PARAM_lr}"'' (the quote
//                           closed around the reference)
//   in a # comment          left as written
// Refused (InvalidArgument naming the placeholder): a placeholder in a
// quoted here-document (<<'EOF'), whose text the shell never expands, or in
// a here-document's delimiter; and, in $((...)), a value that is not a
// number, since bash evaluates a[$(...)] there. A command that runs its
// argument as code (eval, sh -c '...{lr}...') runs the value: the shell's
// rules, not clusterd's.
Result<std::string> SubstituteInShell(const std::string& command, const TrialParams& params);

// The job's config (a JSON object, "" for none) with the parameters set over it.
Result<std::string> MergeConfig(const std::string& config_json, const TrialParams& params);

// The checks the parser makes with file positions, for a spec from the
// wire; messages name the key: "key 'tune.search_space.lr': ...".
Status ValidateTuneSpec(const JobSpec& spec);
// A placeholder of the entrypoint that names no parameter, or that stands
// where SubstituteInShell refuses it whatever the value: InvalidArgument
// naming it and its argument; OK otherwise.
Status CheckPlaceholders(const JobSpec& spec);

// The spec of trial `index` of a sweep: the tune section dropped, its
// parameters in config and entrypoint, its name "<name>-trial-<index>".
Result<JobSpec> TrialSpec(const JobSpec& sweep_spec, const std::string& sweep_id, int64_t index);

}  // namespace clusterd
