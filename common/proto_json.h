// Messages as JSON the way clusterctl --json and the dashboard show them:
// compact, proto field names, every field present, and every map's keys
// sorted (bytewise: upper-case names first), so that the same message
// always reads the same. People read a ResourceSet through
// FormatResources (common/resources.h) or the dashboard's res().
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace clusterd {

std::string ToJson(const google::protobuf::Message& message);

}  // namespace clusterd
