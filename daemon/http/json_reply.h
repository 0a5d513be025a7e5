// The dashboard's JSON replies: a document written by nlohmann::json, and
// errors, {"error": "..."} with the HTTP status that fits a Status's code,
// so every endpoint refuses alike.
#pragma once

#include <string>

// Only the declarations: what writes a reply includes <nlohmann/json.hpp>;
// what only refuses (JsonError) does not pay for compiling it.
#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "daemon/http/http_server.h"

namespace clusterd {

// `body` with its members in the order given; bytes that are not UTF-8 (a
// path, a rank's output) become U+FFFD, so a browser can always parse it.
HttpReply JsonReply(int status, const nlohmann::ordered_json& body);
HttpReply JsonError(int status, const std::string& message);
// InvalidArgument and Corruption (bytes the client sent) 400, NotFound 404,
// AlreadyExists and FailedPrecondition 409, ResourceExhausted 507 (the
// store is full), Unavailable 503 (the journal cannot be written), the
// rest 500; the message as it is.
HttpReply JsonErrorOf(const Status& status);

}  // namespace clusterd
