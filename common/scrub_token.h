// What `ps` and /proc/PID/cmdline show must not carry the cluster token for
// a process's whole life (a daemon's, a `clusterctl logs -f`'s): once the
// command line is parsed from a copy, a --token value is overwritten in
// place.
#pragma once

namespace clusterd {

// Overwrites the value of every `--token V` and `--token=V` in argv with x's.
void ScrubToken(int argc, char** argv);

}  // namespace clusterd
