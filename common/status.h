// One Status type for every fallible call. No exceptions cross module lines:
// library exceptions (yaml-cpp, Boost, std) are caught at the edge and turned
// into a Status; gRPC status codes appear only in daemon/rpc and cli.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace clusterd {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,
    kNotFound,
    kAlreadyExists,
    kFailedPrecondition,
    kUnauthenticated,
    kUnavailable,
    kResourceExhausted,
    kIOError,
    kCorruption,
    kInternal,
    // The caller is known but the rule does not let them (another user's
    // job, an admin's command, a node token outside node registration).
    kPermissionDenied,
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
  static Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
  static Status AlreadyExists(std::string m) { return Status(Code::kAlreadyExists, std::move(m)); }
  static Status FailedPrecondition(std::string m) { return Status(Code::kFailedPrecondition, std::move(m)); }
  static Status Unauthenticated(std::string m) { return Status(Code::kUnauthenticated, std::move(m)); }
  static Status Unavailable(std::string m) { return Status(Code::kUnavailable, std::move(m)); }
  static Status ResourceExhausted(std::string m) { return Status(Code::kResourceExhausted, std::move(m)); }
  static Status IOError(std::string m) { return Status(Code::kIOError, std::move(m)); }
  static Status Corruption(std::string m) { return Status(Code::kCorruption, std::move(m)); }
  static Status Internal(std::string m) { return Status(Code::kInternal, std::move(m)); }
  static Status PermissionDenied(std::string m) { return Status(Code::kPermissionDenied, std::move(m)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Prefixes the message with context ("job.yaml: ..."), keeping the code.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // REQUIRES: ok()
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  // The value, or `fallback` when there is none.
  T value_or(T fallback) const { return ok() ? *value_ : std::move(fallback); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace clusterd

#define CLUSTERD_CONCAT_INNER(a, b) a##b
#define CLUSTERD_CONCAT(a, b) CLUSTERD_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                   \
  do {                                          \
    ::clusterd::Status _st = (expr);            \
    if (!_st.ok()) return _st;                  \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)   \
  auto tmp = (expr);                            \
  if (!tmp.ok()) return tmp.status();           \
  lhs = std::move(tmp.value())

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(CLUSTERD_CONCAT(_result_, __LINE__), lhs, expr)
