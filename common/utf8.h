// proto3 `string` fields must hold valid UTF-8: a message with a raw byte
// sequence that is not (a rank's log tail cut inside a multi-byte
// character, a file name in Latin-1) cannot be parsed by the receiver, and
// a head that cannot parse a node's message drops its stream. Raw bytes
// therefore never reach a string field unchecked.
#pragma once

#include <string>
#include <string_view>

#include <google/protobuf/message.h>

namespace clusterd {

bool IsValidUtf8(std::string_view text);

// `text` with every byte that does not start a well-formed UTF-8 sequence
// replaced by U+FFFD (as a reader would show it); valid text is unchanged.
std::string ValidUtf8(std::string_view text);

// Makes every string field of `message` (nested, repeated and map fields
// included) valid UTF-8; `bytes` fields are left alone.
void CleanStrings(google::protobuf::Message* message);

}  // namespace clusterd
