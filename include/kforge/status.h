// Status and Result<T>: how kforge reports expected failures.
//
// A Status is either OK or carries a code and a message written for a person: what went wrong
// and what to do about it. Kernel outcomes (compile errors, wrong answers, crashes) are not
// Statuses: they are verdicts (see verdict.h). Bugs are assertions, not Statuses.
//
// Thread-safety: values; safe to copy between threads.
#ifndef KFORGE_STATUS_H_
#define KFORGE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace kforge {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from the user: a flag, a problem file, a candidate
  kNotFound,         // a file, problem, backend or device that does not exist
  kUnavailable,      // a backend or service that cannot be used on this machine
  kIoError,          // the file system or a pipe failed
  kInternal,         // kforge's own fault
};

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, msg}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, msg}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, msg}; }
  static Status IoError(std::string msg) { return {StatusCode::kIoError, msg}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, msg}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>" style text for printing.
  std::string ToString() const;
  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(const std::string& context) const;

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "Result built from an OK status has no value");
  }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // REQUIRES: ok().
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace kforge

// Returns early from the enclosing function with the Status if it is not OK.
#define KF_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::kforge::Status kf_status_ = (expr);        \
    if (!kf_status_.ok()) return kf_status_;     \
  } while (0)

#define KF_CONCAT_INNER_(a, b) a##b
#define KF_CONCAT_(a, b) KF_CONCAT_INNER_(a, b)
// Declares `lhs` from a Result, or returns its Status from the enclosing function.
#define KF_ASSIGN_OR_RETURN(lhs, expr)                                   \
  auto KF_CONCAT_(kf_result_, __LINE__) = (expr);                        \
  if (!KF_CONCAT_(kf_result_, __LINE__).ok())                            \
    return KF_CONCAT_(kf_result_, __LINE__).status();                    \
  lhs = std::move(KF_CONCAT_(kf_result_, __LINE__)).value()

#endif  // KFORGE_STATUS_H_
