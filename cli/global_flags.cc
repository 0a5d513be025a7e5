#include "cli/global_flags.h"

#include <algorithm>
#include <array>

namespace clusterd::cli {

namespace {

// Those of command_line.cc's flags that take a value, and the switches.
constexpr std::array<const char*, 5> kValueFlags = {"--address", "--token", "--tls-ca", "--temp-dir", "--timeout-ms"};
constexpr std::array<const char*, 1> kSwitches = {"--json"};

template <size_t N>
bool In(const std::array<const char*, N>& names, const std::string& flag) {
  return std::find_if(names.begin(), names.end(), [&](const char* name) { return flag == name; }) != names.end();
}

}  // namespace

Result<std::vector<std::string>> MoveGlobalFlags(const std::vector<std::string>& args) {
  std::vector<std::string> leading;
  size_t i = 0;
  for (; i < args.size() && args[i].rfind("-", 0) == 0; ++i) {
    const std::string& arg = args[i];
    std::string name = arg.substr(0, arg.find('='));
    if (In(kValueFlags, name)) {
      leading.push_back(arg);
      if (name == arg) {  // --address H:P, not --address=H:P
        if (i + 1 == args.size()) return Status::InvalidArgument(arg + " needs a value");
        leading.push_back(args[++i]);
      }
    } else if (In(kSwitches, arg)) {
      leading.push_back(arg);
    } else {
      return Status::InvalidArgument("unknown flag '" + arg + "' before the command (global flags: --address, "
                                     "--token, --tls-ca, --temp-dir, --timeout-ms, --json)");
    }
  }
  if (i == args.size()) {
    if (leading.empty()) return std::vector<std::string>{};
    return Status::InvalidArgument("no command after " + leading.front());
  }
  std::vector<std::string> out{args[i]};
  out.insert(out.end(), leading.begin(), leading.end());
  out.insert(out.end(), args.begin() + static_cast<long>(i) + 1, args.end());
  return out;
}

}  // namespace clusterd::cli
