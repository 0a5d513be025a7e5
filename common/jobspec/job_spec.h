// Job files: YAML in, a validated clusterd::JobSpec out (the reference for
// the keys is config/README.md). Every error names the file, line, column
// and key, or the --set override it came from (DESIGN rule 10):
//   job.yaml:7:3: key 'resources_per_worker.GPU': expected a number >= 0, got -1
//   --set num_workers=abc: expected an integer, got 'abc'
// No exception leaves these functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/config.h"
#include "common/status.h"

namespace clusterd {

// Larger files are refused before parsing: a job file is a page of YAML,
// and a stray multi-gigabyte argument must not be read into memory.
inline constexpr size_t kMaxJobFileBytes = 1 << 20;
// restart_delay when a job file leaves it out, as Kubernetes' crash-loop
// backoff (which starts at 10 s): 1 s, doubling, at most 5 min; an attempt
// that ran kRestartDelayResetS starts the sequence over. The reset is fixed,
// as Kubernetes' 10 min is: a job that wants another backoff sets its own
// restart_delay, so no operator needs a config key for it.
inline constexpr double kDefaultRestartDelayInitialS = 1;
inline constexpr double kDefaultRestartDelayMaxS = 300;
inline constexpr double kDefaultRestartDelayFactor = 2;
inline constexpr double kRestartDelayResetS = 600;
// The spec's restart_delay, or the defaults when it has none.
RestartDelay EffectiveRestartDelay(const JobSpec& spec);

// checkpoint.upload_rate when a job file leaves it out: on a node whose
// cores all train, a 500 MiB checkpoint sent at full speed cost its steps
// 3-8% for the 2 s it took; sent in 5 s at this rate, ~0%
// (docs/BENCHMARKS.md, checkpoints). A 10 GB checkpoint takes ~100 s.
inline constexpr int64_t kDefaultCheckpointUploadRate = int64_t{100} << 20;
inline constexpr int64_t kMinCheckpointUploadRate = int64_t{1} << 20;
inline constexpr int64_t kMaxCheckpointUploadRate = int64_t{1} << 40;
// Bytes a second rank 0's node sends a checkpoint at (0: no limit).
int64_t EffectiveCheckpointUploadRate(const JobSpec& spec);

// max_package_size when a job file leaves it out: clusterctl packs no more,
// and the head's HTTP API (clusterd.job_submission's uploads) takes no more.
inline constexpr int64_t kDefaultMaxPackageBytes = int64_t{2} << 30;

// Parses job-file text. `file_name` is used in messages, as the default
// `name` (its stem) and as source_file. `overrides` are clusterctl's
// `--set dotted.key=value` arguments, applied in order to the YAML tree
// before conversion; each value is parsed as YAML ("4", "[a, b]", "bar").
// `working_dir` is kept as written: only LoadJobSpecFile resolves it.
Result<JobSpec> ParseJobSpec(const std::string& text, const std::string& file_name,
                             const std::vector<std::string>& overrides = {},
                             int max_num_workers = Config().max_num_workers);

// Reads `path` (refusing files over kMaxJobFileBytes without reading them),
// parses it as ParseJobSpec does, and resolves a relative working_dir
// against the process's current directory (where clusterctl runs), which
// must hold it as a directory. The spec then carries the absolute path.
Result<JobSpec> LoadJobSpecFile(const std::string& path, const std::vector<std::string>& overrides = {},
                                int max_num_workers = Config().max_num_workers);

// The semantic checks a spec must pass wherever it comes from: the parser
// runs them, and the head runs them again on SubmitJob, since a spec over
// the wire may come from any client. Messages name the key, not a line:
//   key 'num_workers': expected an integer between 1 and 4096, got 0
Status ValidateJobSpec(const JobSpec& spec, int max_num_workers = Config().max_num_workers);

}  // namespace clusterd
