#include "common/status.h"

namespace clusterd {

namespace {
const char* CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "OK";
    case Status::Code::kInvalidArgument: return "invalid argument";
    case Status::Code::kNotFound: return "not found";
    case Status::Code::kAlreadyExists: return "already exists";
    case Status::Code::kFailedPrecondition: return "failed precondition";
    case Status::Code::kUnauthenticated: return "unauthenticated";
    case Status::Code::kUnavailable: return "unavailable";
    case Status::Code::kResourceExhausted: return "resource exhausted";
    case Status::Code::kIOError: return "I/O error";
    case Status::Code::kCorruption: return "corruption";
    case Status::Code::kInternal: return "internal error";
    case Status::Code::kPermissionDenied: return "permission denied";
  }
  return "unknown";
}
}  // namespace

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace clusterd
