#include "common/net/grpc_status.h"

namespace clusterd {

grpc::Status ToGrpc(const Status& status) {
  using C = Status::Code;
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  switch (status.code()) {
    case C::kOk: return grpc::Status::OK;
    case C::kInvalidArgument: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case C::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case C::kAlreadyExists: code = grpc::StatusCode::ALREADY_EXISTS; break;
    case C::kFailedPrecondition: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case C::kUnauthenticated: code = grpc::StatusCode::UNAUTHENTICATED; break;
    case C::kUnavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    case C::kResourceExhausted: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case C::kIOError: code = grpc::StatusCode::INTERNAL; break;
    case C::kCorruption: code = grpc::StatusCode::DATA_LOSS; break;
    case C::kInternal: code = grpc::StatusCode::INTERNAL; break;
    case C::kPermissionDenied: code = grpc::StatusCode::PERMISSION_DENIED; break;
  }
  return grpc::Status(code, status.message());
}

Status FromGrpc(const grpc::Status& status) {
  const std::string& m = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::OK: return Status::Ok();
    case grpc::StatusCode::INVALID_ARGUMENT: return Status::InvalidArgument(m);
    case grpc::StatusCode::NOT_FOUND: return Status::NotFound(m);
    case grpc::StatusCode::ALREADY_EXISTS: return Status::AlreadyExists(m);
    case grpc::StatusCode::FAILED_PRECONDITION: return Status::FailedPrecondition(m);
    case grpc::StatusCode::UNAUTHENTICATED: return Status::Unauthenticated(m);
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED: return Status::Unavailable(m);
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return Status::ResourceExhausted(m);
    case grpc::StatusCode::DATA_LOSS: return Status::Corruption(m);
    case grpc::StatusCode::PERMISSION_DENIED: return Status::PermissionDenied(m);
    default: return Status::Internal(m);
  }
}

}  // namespace clusterd
