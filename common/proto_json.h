// Messages as JSON the way clusterctl --json and the dashboard show them:
// compact, proto field names, every field present.
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace clusterd {

std::string ToJson(const google::protobuf::Message& message);

}  // namespace clusterd
