#include "daemon/agent/rank_output_pipes.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace clusterd {

namespace {

// A rank's pipe holds this much while the loop is busy elsewhere (Linux's
// default is 64 KiB); where the user's pipe quota refuses it, the default.
constexpr int kPipeBytes = 1 << 20;

}  // namespace

Result<std::vector<int>> OpenOutputPipes(std::vector<SpawnRequest>* requests) {
  std::vector<int> outputs;
  for (SpawnRequest& request : *requests) {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) {
      const int error = errno;
      for (size_t i = 0; i < outputs.size(); ++i) {
        close(outputs[i]);
        close((*requests)[i].output_fd);
        (*requests)[i].output_fd = -1;
      }
      return Status::Unavailable(fmt::format("cannot make a pipe for a rank's output: {}", std::strerror(error)));
    }
    fcntl(ends[0], F_SETFL, O_NONBLOCK);
    fcntl(ends[1], F_SETPIPE_SZ, kPipeBytes);
    outputs.push_back(ends[0]);
    request.output_fd = ends[1];
  }
  return outputs;
}

}  // namespace clusterd
