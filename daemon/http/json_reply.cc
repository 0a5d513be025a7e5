#include "daemon/http/json_reply.h"

#include <nlohmann/json.hpp>

namespace clusterd {

HttpReply JsonReply(int status, const nlohmann::ordered_json& body) {
  return {status, "application/json", body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)};
}

HttpReply JsonError(int status, const std::string& message) { return JsonReply(status, {{"error", message}}); }

HttpReply JsonErrorOf(const Status& status) {
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
    case Status::Code::kCorruption: return JsonError(400, status.message());
    case Status::Code::kNotFound: return JsonError(404, status.message());
    case Status::Code::kPermissionDenied: return JsonError(403, status.message());
    case Status::Code::kAlreadyExists:
    case Status::Code::kFailedPrecondition: return JsonError(409, status.message());
    case Status::Code::kResourceExhausted: return JsonError(507, status.message());
    case Status::Code::kUnavailable: return JsonError(503, status.message());
    default: return JsonError(500, status.message());
  }
}

}  // namespace clusterd
