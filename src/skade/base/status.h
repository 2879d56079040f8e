// Status and Result<T>: the error values every fallible skade call returns (skade does not
// throw across module boundaries), plus the SKADE_* error-flow and check macros.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace skade {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kConflict,
  kCommitUnknown,
  kNotImplemented,
  kUnauthorized,      // no or bad credentials
  kPermissionDenied,  // known caller (or anyone), operation not allowed
  kResourceExhausted, // a limit (sessions, memory, size) was reached
  kCancelled,         // the caller cancelled or went away before the operation finished
  kIoError,
  kCorruption,
  kUnavailable,
  kInternal,
};

// Name of a code, e.g. "InvalidArgument".
std::string_view StatusCodeName(StatusCode code);

// An error code plus a human-readable message; Ok() carries no message. Cheap to move.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status Conflict(std::string m) { return {StatusCode::kConflict, std::move(m)}; }
  static Status CommitUnknown(std::string m) { return {StatusCode::kCommitUnknown, std::move(m)}; }
  static Status NotImplemented(std::string m) { return {StatusCode::kNotImplemented, std::move(m)}; }
  static Status Unauthorized(std::string m) { return {StatusCode::kUnauthorized, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "Code: message", or "OK".
  std::string ToString() const;

  // Prefixes the message with `context` ("context: message"); no-op on Ok.
  Status WithContext(std::string_view context) const&;
  Status WithContext(std::string_view context) &&;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-Ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(state_).ok()) {
      state_ = Status::Internal("Result constructed from an Ok status without a value");
    }
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  // The error (Ok when a value is held). On a temporary Result the Status is returned by
  // value, so `SKADE_RETURN_IF_ERROR(f().status())` or `auto&& s = f().status()` never refer
  // into a destroyed temporary.
  const Status& status() const& {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(state_);
  }
  Status status() && {
    if (ok()) return Status::Ok();
    return std::get<Status>(std::move(state_));
  }
  // Precondition: ok().
  // On a temporary Result the value is moved out (returned by value), never referenced.
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T ValueOr(T fallback) && { return ok() ? std::move(value()) : std::move(fallback); }

  Result WithContext(std::string_view context) && {
    if (ok()) return std::move(*this);
    return std::get<Status>(state_).WithContext(context);
  }

 private:
  std::variant<T, Status> state_;
};

namespace internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr, std::string_view msg);
inline const Status& AsStatus(const Status& s) { return s; }
template <typename T>
const Status& AsStatus(const Result<T>& r) { return r.status(); }
}  // namespace internal

}  // namespace skade

#define SKADE_CONCAT_INNER(a, b) a##b
#define SKADE_CONCAT(a, b) SKADE_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` (a Status or Result) is not Ok.
#define SKADE_RETURN_IF_ERROR(expr)                                       \
  do {                                                                    \
    auto&& skade_status_or_result_ = (expr);                              \
    if (!skade_status_or_result_.ok())                                    \
      return ::skade::internal::AsStatus(skade_status_or_result_);        \
  } while (false)

#define SKADE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

// `lhs = value of rexpr`, or return its Status from the enclosing function.
#define SKADE_ASSIGN_OR_RETURN(lhs, rexpr) \
  SKADE_ASSIGN_OR_RETURN_IMPL(SKADE_CONCAT(skade_result_, __LINE__), lhs, rexpr)

// Aborts with a message when an invariant is broken (a bug, never bad input).
#define SKADE_CHECK(cond)                                                   \
  do {                                                                      \
    if (!(cond)) ::skade::internal::CheckFailed(__FILE__, __LINE__, #cond, ""); \
  } while (false)

#ifdef NDEBUG
#define SKADE_DCHECK(cond) \
  do {                     \
  } while (false && (cond))
#else
#define SKADE_DCHECK(cond) SKADE_CHECK(cond)
#endif
