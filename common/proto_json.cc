#include "common/proto_json.h"

#include <google/protobuf/util/json_util.h>

namespace clusterd {

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.always_print_enums_as_ints = false;
  google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}


}  // namespace clusterd
