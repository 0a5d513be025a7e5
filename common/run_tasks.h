// A few worker threads over a numbered list of tasks: what moves a tree's
// pieces through several streams at once (common/storage/tree_transfer.h).
#pragma once

#include <cstddef>
#include <functional>

#include "common/status.h"

namespace clusterd {

// Runs task(0) .. task(count - 1) on up to `workers` threads (the caller's
// among them), taken in index order. After the first error no new task
// starts; returns that error once the running ones end.
Status RunTasks(int workers, size_t count, const std::function<Status(size_t index)>& task);

}  // namespace clusterd
