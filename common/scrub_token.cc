#include "common/scrub_token.h"

#include <cstring>

namespace clusterd {

void ScrubToken(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* value = nullptr;
    if (std::strcmp(argv[i], "--token") == 0 && i + 1 < argc) value = argv[i + 1];
    if (std::strncmp(argv[i], "--token=", 8) == 0) value = argv[i] + 8;
    if (value) std::memset(value, 'x', std::strlen(value));
  }
}

}  // namespace clusterd
