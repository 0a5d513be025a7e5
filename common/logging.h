// Line logging with fmt: "2026-11-21T22:40:01.123Z I head: node w1 ALIVE".
// Thread-safe; writes to stderr, which a daemon points at its log file.
#pragma once

#include <fmt/format.h>

#include <string>

namespace clusterd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, const std::string& line);

template <typename... Args>
void Log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (!LogEnabled(level)) return;
  LogLine(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace clusterd

#define LOG_DEBUG(...) ::clusterd::Log(::clusterd::LogLevel::kDebug, __VA_ARGS__)
#define LOG_INFO(...) ::clusterd::Log(::clusterd::LogLevel::kInfo, __VA_ARGS__)
#define LOG_WARN(...) ::clusterd::Log(::clusterd::LogLevel::kWarning, __VA_ARGS__)
#define LOG_ERROR(...) ::clusterd::Log(::clusterd::LogLevel::kError, __VA_ARGS__)
