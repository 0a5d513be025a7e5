// Names the calling thread, as `top -H`, `ps -L`, /proc/PID/task/*/comm and
// perf show it: a daemon's dozen threads are otherwise all "clusterd", and
// which one costs what (the event loop, the link to the head, a socket's
// io thread) cannot be told apart. The daemon's threads start through
// common/threads.h, which names them with this and counts them.
#pragma once

#include <pthread.h>

namespace clusterd {

// `name`: at most 15 characters (Linux's limit; a longer one is cut).
inline void NameThisThread(const char* name) {
  char cut[16] = {};
  for (int i = 0; i < 15 && name[i] != '\0'; ++i) cut[i] = name[i];
  pthread_setname_np(pthread_self(), cut);
}

}  // namespace clusterd
