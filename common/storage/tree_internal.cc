#include "common/storage/tree_internal.h"

namespace clusterd::tree_internal {

Status InContext(const Status& status, const std::string& what, const std::string& folder, const std::string& store) {
  if (status.ok()) return status;
  std::string m = status.message();
  if (m.find(folder) == std::string::npos) m = what + ": " + m;
  if (m.find(store) == std::string::npos) m += " (" + store + ")";
  using C = Status::Code;
  switch (status.code()) {
    case C::kOk: break;
    case C::kInvalidArgument: return Status::InvalidArgument(m);
    case C::kNotFound: return Status::NotFound(m);
    case C::kAlreadyExists: return Status::AlreadyExists(m);
    case C::kFailedPrecondition: return Status::FailedPrecondition(m);
    case C::kUnauthenticated: return Status::Unauthenticated(m);
    case C::kUnavailable: return Status::Unavailable(m);
    case C::kResourceExhausted: return Status::ResourceExhausted(m);
    case C::kIOError: return Status::IOError(m);
    case C::kCorruption: return Status::Corruption(m);
    case C::kInternal: return Status::Internal(m);
    case C::kPermissionDenied: return Status::PermissionDenied(m);
  }
  return Status::Internal(m);
}

}  // namespace clusterd::tree_internal
