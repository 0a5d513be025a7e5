#include "common/text.h"

#include <fmt/format.h>

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

std::string JsonQuote(const std::string& text) {
  // JSON is UTF-8: a byte that starts no character (a rank's binary
  // output, a Latin-1 file name) becomes U+FFFD, as a reader shows it.
  // Valid text (nearly all) is quoted as it is, not copied first.
  if (!IsValidUtf8(text)) return JsonQuote(ValidUtf8(text));
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
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
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    if (b0 < 0x20 || b0 == 0x7f) return true;
    if (i + 1 >= text.size()) break;
    const auto b1 = static_cast<unsigned char>(text[i + 1]);
    if (b0 == 0xC2 && b1 >= 0x80 && b1 <= 0x9F) return true;
    if (i + 2 >= text.size() || b0 != 0xE2) continue;
    const auto b2 = static_cast<unsigned char>(text[i + 2]);
    if (b1 == 0x80 && b2 >= 0xA8 && b2 <= 0xAE) return true;
    if (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9) return true;
  }
  return false;
}

}  // namespace clusterd
