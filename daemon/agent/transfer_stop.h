// How a stopping agent ends what it fetches from and stores to the head's
// store: the launch preparer and the uploader stop, and the store calls
// still under way get a grace period to finish, then are cancelled. Against
// a head that stopped answering (SIGSTOP) a store call would wait out its
// 30 s deadline, and `clusterd stop` end in a SIGKILL that loses what the
// agent kept for the head.
#pragma once

#include <functional>

#include "common/waitable_clock.h"

namespace clusterd {

// Runs `stop` on this thread (it returns once the transfers are over); if it
// has not returned `grace_ms` into it, by `clock`, calls `cancel` once from
// a thread of its own, which makes the calls under way fail so that `stop`
// returns. Returns whether `cancel` was called.
bool StopTransfersWithin(int grace_ms, const WaitableClock* clock, const std::function<void()>& stop,
                         const std::function<void()>& cancel);

}  // namespace clusterd
