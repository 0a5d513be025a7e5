// One head per state folder: an flock on STATE/lock, held for the life of
// the process (its fd is never closed). A head restarted right after the
// old one was killed may find the lock still held for a moment: a killed
// multi-threaded process releases its files only once its last thread has
// gone, after its main thread already shows as a zombie. So the lock is
// waited for, up to `wait`, before the start is refused.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"

namespace clusterd {

// The lock's fd on success (close-on-exec, so ranks never hold it);
// FailedPrecondition naming the folder when another head still holds it
// after `wait`; IOError when the lock file cannot be opened.
Result<int> LockStateFolder(const std::string& state_dir, std::chrono::milliseconds wait);

}  // namespace clusterd
