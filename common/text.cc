#include "common/text.h"

#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/utf8.h"

namespace clusterd {

std::string LastLines(const std::string& text, int lines) {
  if (text.empty() || lines <= 0) return "";
  size_t end = text.size();
  if (text[end - 1] == '\n') --end;  // the trailing newline closes the last line
  size_t start = end;
  for (int i = 0; i < lines; ++i) {
    size_t newline = start == 0 ? std::string::npos : text.rfind('\n', start - 1);
    if (newline == std::string::npos) return text.substr(0, end);
    start = newline;
  }
  return text.substr(start + 1, end - start - 1);
}

namespace {

// The length in bytes of the terminal control (HasTerminalControls) that
// starts at text[i], and its code point; 0 when none starts there.
size_t ControlAt(const std::string& text, size_t i, uint32_t* code) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x20 || b0 == 0x7f) {
    *code = b0;
    return 1;
  }
  if (b0 != 0xC2 && b0 != 0xE2) return 0;
  if (i + 1 >= text.size()) return 0;
  const auto b1 = static_cast<unsigned char>(text[i + 1]);
  if (b0 == 0xC2) {
    if (b1 < 0x80 || b1 > 0x9F) return 0;
    *code = b1;  // U+0080..U+009F
    return 2;
  }
  if (i + 2 >= text.size()) return 0;
  const auto b2 = static_cast<unsigned char>(text[i + 2]);
  const bool control = (b1 == 0x80 && (b2 == 0x8E || b2 == 0x8F || (b2 >= 0xA8 && b2 <= 0xAE))) ||
                       (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9);
  if (!control) return 0;
  *code = 0x2000 + ((b1 & 0x3F) << 6) + (b2 & 0x3F);
  return 3;
}

// JSON's one-letter escapes of controls, and the code each stands for.
constexpr char kShortEscapes[] = "bfnrt";
constexpr uint8_t kShortEscapeCodes[] = {0x08, 0x0c, 0x0a, 0x0d, 0x09};

}  // namespace

std::string JsonQuote(const std::string& text) {
  // JSON is UTF-8: a byte that starts no character (a rank's binary
  // output, a Latin-1 file name) becomes U+FFFD, as a reader shows it.
  const std::string json = nlohmann::json(IsValidUtf8(text) ? text : ValidUtf8(text)).dump();
  // nlohmann::json escapes what JSON must; a quoted name in a message must
  // also show every control a terminal acts on (a refusal that echoed
  // U+202E turned the line around), all of them in one form, \uXXXX.
  std::string out;
  out.reserve(json.size());
  uint32_t code = 0;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '\\') {
      const char escaped = json[++i];
      const char* short_form = std::strchr(kShortEscapes, escaped);
      if (short_form != nullptr && escaped != '\0') {
        out += fmt::format("\\u{:04x}", static_cast<int>(kShortEscapeCodes[short_form - kShortEscapes]));
      } else {
        out += '\\';
        out += escaped;  // \" \\ or the start of \uXXXX, whose digits follow as they are
      }
    } else if (const size_t length = ControlAt(json, i, &code); length > 0) {
      out += fmt::format("\\u{:04x}", code);
      i += length - 1;
    } else {
      out += json[i];
    }
  }
  return out;
}

std::string HumanBytes(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string HumanBytesExact(uint64_t bytes) {
  static const char* const kUnits[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int unit = 0; unit < 4; ++unit) {
    const uint64_t size = uint64_t{1} << (10 * (4 - unit));
    if (bytes >= size && bytes % size == 0) return fmt::format("{} {}", bytes / size, kUnits[unit]);
  }
  return HumanBytes(bytes);
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string ShellWord(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                            "-_./=:,+@%") == std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool HasTerminalControls(const std::string& text) {
  uint32_t code = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (ControlAt(text, i, &code) > 0) return true;
  }
  return false;
}

}  // namespace clusterd
