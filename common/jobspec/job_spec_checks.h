// The checks of single job-spec fields, shared by the YAML parser (which
// adds file:line:col) and ValidateJobSpec (which adds the key), so that a
// rule and its message live in one place. Each returns OK or an
// InvalidArgument whose message says what is wrong but not where.
#pragma once

#include <cstdint>
#include <string>

#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd::job_spec_internal {

inline constexpr size_t kMaxNameLength = 128;
inline constexpr size_t kMaxConfigJsonBytes = 1 << 20;
// What one exec may carry (see CheckExecSize): one argument or NAME=value
// with its NUL, and the job's whole argv and environment.
inline constexpr size_t kMaxExecStringBytes = 128 * 1024;
inline constexpr size_t kMaxExecTotalBytes = 1 << 20;
// Jobs one array may make (Slurm's MaxArraySize defaults to 1001; a head
// journals 10,000 no-op jobs in a second).
inline constexpr int64_t kMaxArrayCount = 100000;

// Any string field: no NUL, which would cut an argv or a path short.
Status CheckText(const std::string& text);
Status CheckName(const std::string& name);
// Not empty, program not empty, and not `sh -c` with a blank command.
Status CheckEntrypoint(const google::protobuf::RepeatedPtrField<std::string>& argv);
Status CheckNumWorkers(int64_t num_workers, int max_num_workers);
// Custom names are free, but a different case of CPU/GPU/memory is a typo.
Status CheckResourceName(const std::string& name);
Status CheckResourceAmount(const std::string& name, double amount);
Status CheckEnvName(const std::string& name);
Status CheckPassthroughPattern(const std::string& pattern);
// max_failures and checkpoint.keep: 0 .. INT32_MAX.
Status CheckCount(int64_t count);
Status CheckTimeout(double seconds);
// Empty, or a JSON object no larger than kMaxConfigJsonBytes.
Status CheckConfigJson(const std::string& json);
// A gitignore-style pattern: not empty, no NUL.
Status CheckExclude(const std::string& pattern);
// max_package_size: above 0 bytes.
Status CheckPackageCap(int64_t bytes);
// log_limit: at least kMinLogLimitBytes, so that a rank's first lines and
// a crash's traceback fit. The most a head allows is its own
// (log_limit_max_mb), checked there.
inline constexpr int64_t kMinLogLimitBytes = 64 << 10;
Status CheckLogLimit(int64_t bytes);
// checkpoint.storage: "", "store", "shared" or s3://BUCKET/PREFIX.
Status CheckCheckpointStorage(const std::string& storage);
// checkpoint.upload_rate in bytes a second: 0 (no limit), or from
// kMinCheckpointUploadRate to kMaxCheckpointUploadRate.
Status CheckUploadRate(double bytes_per_s);
// outputs_storage: "" or s3://BUCKET/PREFIX.
Status CheckOutputsStorage(const std::string& storage);
// run_as: "" or a user name as useradd takes it (letters, digits, '_',
// '-' and '.', not starting with '-', at most 32 bytes). Whether the user
// exists and may be used is each node's to say, at launch.
Status CheckRunAs(const std::string& user);
// preemption_grace_s: 0 (the head's default) up to a day; the head caps
// it lower (preemption_grace_max_s). max_preemptions: 0 up to 1000000.
Status CheckPreemptionGrace(double seconds);
// hang_timeout_s: 0 (no hang detection), or from kMinHangTimeoutS up to a year.
constexpr double kMinHangTimeoutS = 1;
Status CheckHangTimeout(double seconds);
Status CheckMaxPreemptions(int64_t count);
// priority: -1000000 .. 1000000. A priority class's name: letters,
// digits, '_', '-' and '.', at most 64 bytes (the head says whether it
// has such a class).
Status CheckPriority(int64_t priority);
Status CheckPriorityClass(const std::string& name);
// restart_delay: 0 <= initial <= max <= 7 days, factor between 1 and 100.
Status CheckRestartDelay(const RestartDelay& delay);
// array.count: 1 .. kMaxArrayCount.
Status CheckArrayCount(int64_t count);
// array.max_concurrent: 0 (no limit) .. kMaxArrayCount; above the count it limits nothing.
Status CheckArrayMaxConcurrent(int64_t max_concurrent);
// A path the job's results go to on the submitter's side (an output, the
// DVCLive folder, the best parameters' file): relative, inside the working
// folder (no "..", not absolute, not empty). `what` names it in the error:
// "'/x' is absolute; {what} is a path under the working folder".
Status CheckPathUnderWorkingDir(const std::string& path, const std::string& what);
// checkpoint.dir: an absolute path, or one under the working folder: a
// relative path such as '../ck' would leave each attempt's folder, and a
// later job would resume from an earlier job's checkpoints there.
Status CheckCheckpointDir(const std::string& dir);

}  // namespace clusterd::job_spec_internal
