#include "common/proto_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver_util.h>

#include <memory>

namespace clusterd {

namespace {

constexpr char kTypeUrlPrefix[] = "type.googleapis.com";

google::protobuf::util::TypeResolver* GeneratedTypes() {
  static const std::unique_ptr<google::protobuf::util::TypeResolver> resolver(
      google::protobuf::util::NewTypeResolverForDescriptorPool(kTypeUrlPrefix,
                                                               google::protobuf::DescriptorPool::generated_pool()));
  return resolver.get();
}

// The message's bytes with every map's entries in key order: protobuf's
// JSON printer writes map entries in the order of the bytes, and a map's
// own order is its hash table's, different from one message to the next.
std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.always_print_enums_as_ints = false;
  if (message.GetDescriptor()->file()->pool() == google::protobuf::DescriptorPool::generated_pool()) {
    const std::string type_url = std::string(kTypeUrlPrefix) + "/" + message.GetDescriptor()->full_name();
    google::protobuf::util::BinaryToJsonString(GeneratedTypes(), type_url, DeterministicBytes(message), &out, options);
  } else {
    google::protobuf::util::MessageToJsonString(message, &out, options);
  }
  return out;
}

}  // namespace clusterd
