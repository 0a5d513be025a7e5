// The plain tools a benchmark's transfer is compared with, on simulated
// machines (tests/integration/machines.h), timed by the static stamp_run
// (bench/shipping/stamp_run.cc) on the machines themselves, so the clock is
// the kernel's CLOCK_REALTIME that every machine shares:
//   tar | nc: `tar -C SRC -cf - . | nc -N TO PORT` on one machine into
//             `nc -l PORT | tar -C DEST -xf -` on another; from right before
//             the sender's sh is spawned until the receiver's tar has exited
//             (and, when asked, `sync -f DEST` returned). To several
//             machines at once: one such pipeline per receiver, all started
//             together, until the last receiver is done.
//   cp:       `cp -r SRC DEST` on one machine (and `sync -f DEST` when asked).
// Used by bench/shipping and bench/checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "machines.h"

namespace clusterd::bench {

struct StampedTimes {
  int64_t start_ns = 0;  // right before the command was spawned
  int64_t done_ns = 0;   // it (or the receiving side) was done
  double Ms() const { return static_cast<double>(done_ns - start_ns) / 1e6; }
};

struct TarOverNc {
  testing::Machine* from = nullptr;
  std::string src;  // folder on `from`; its contents are sent
  testing::Machine* to = nullptr;
  std::vector<testing::Machine*> also_to;  // more receivers, each with port + 1, + 2, ...
  std::string dest;  // existing folder on every receiver they are written into
  int port = 0;      // free on `to`
  std::string stamp_run;  // path of stamp_run, visible on both machines
  std::string stamps;     // a folder on both machines for the stamp files
  std::string name;       // names the stamp files
  std::string log;        // a path of this process: the receiver's output
  bool sync = false;      // the receiver runs `sync -f DEST` before it stamps
};

// Runs the copy and times it; false with the reason (and the receiver's
// output) in *error.
bool TimeTarOverNc(const TarOverNc& copy, StampedTimes* times, std::string* error);

// `cp -r SRC DEST` (DEST must not exist) on `machine`, then `sync -f DEST`
// when `sync`; stamps go to `stamp_file` on the machine.
bool TimeCp(testing::Machine& machine, const std::string& stamp_run, const std::string& src, const std::string& dest,
            bool sync, const std::string& stamp_file, StampedTimes* times, std::string* error);

// "START END\n" as stamp_run writes it (a path of this process).
bool ReadStamp(const std::string& path, int64_t* start, int64_t* end);
// Bytes of all regular files under `root` (a path of this process).
uint64_t FileBytes(const std::string& root);

}  // namespace clusterd::bench
