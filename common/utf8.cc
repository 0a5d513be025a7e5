#include "common/utf8.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

namespace clusterd {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed sequence at text[i] (RFC 3629: no overlongs, no
// surrogates, at most U+10FFFF), or 0.
size_t SequenceLength(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  unsigned char second = byte(i + 1);
  if (c == 0xE0 && second < 0xA0) return 0;  // overlong
  if (c == 0xED && second > 0x9F) return 0;  // surrogate
  if (c == 0xF0 && second < 0x90) return 0;  // overlong
  if (c == 0xF4 && second > 0x8F) return 0;  // above U+10FFFF
  return n;
}

void CleanField(google::protobuf::Message* message, const google::protobuf::FieldDescriptor* field) {
  const google::protobuf::Reflection* reflection = message->GetReflection();
  using Type = google::protobuf::FieldDescriptor::Type;
  if (field->type() == Type::TYPE_STRING) {
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
        std::string value = reflection->GetRepeatedString(*message, field, i);
        if (!IsValidUtf8(value)) reflection->SetRepeatedString(message, field, i, ValidUtf8(value));
      }
    } else {
      std::string value = reflection->GetString(*message, field);
      if (!IsValidUtf8(value)) reflection->SetString(message, field, ValidUtf8(value));
    }
  } else if (field->type() == Type::TYPE_MESSAGE) {
    if (field->is_repeated()) {  // map entries are repeated messages too
      for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
        CleanStrings(reflection->MutableRepeatedMessage(message, field, i));
      }
    } else if (reflection->HasField(*message, field)) {
      CleanStrings(reflection->MutableMessage(message, field));
    }
  }
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t n = SequenceLength(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = SequenceLength(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

void CleanStrings(google::protobuf::Message* message) {
  const google::protobuf::Descriptor* descriptor = message->GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) CleanField(message, descriptor->field(i));
}

}  // namespace clusterd
