// OpenOutputPipes (daemon/agent/rank_output_pipes.h): a pipe per rank, the
// agent's end never blocking.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "daemon/agent/rank_output_pipes.h"

using namespace clusterd;

TEST_CASE("each rank's output goes into its own pipe, read without blocking", "[rank_output_pipes]") {
  std::vector<SpawnRequest> requests(2);
  auto pipes = OpenOutputPipes(&requests);
  REQUIRE(pipes.ok());
  REQUIRE(pipes->size() == 2);
  for (size_t i = 0; i < requests.size(); ++i) {
    const int read_end = (*pipes)[i];
    const int write_end = requests[i].output_fd;
    REQUIRE(write_end >= 0);
    REQUIRE((fcntl(read_end, F_GETFL) & O_NONBLOCK) != 0);
    REQUIRE((fcntl(write_end, F_GETFL) & O_NONBLOCK) == 0);
    char byte;
    REQUIRE(read(read_end, &byte, 1) == -1);  // empty: no wait
    const std::string text = "rank " + std::to_string(i);
    REQUIRE(write(write_end, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    char buffer[16] = {};
    REQUIRE(read(read_end, buffer, sizeof buffer) == static_cast<ssize_t>(text.size()));
    REQUIRE(std::string(buffer) == text);
    close(read_end);
    close(write_end);
  }
}
