// result<T>: a value or an error status, for fallible calls that produce something.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/status.hpp"

namespace mnemo {

template <class T>
class [[nodiscard]] result {
  static_assert(!std::is_reference_v<T>, "result<T&> is not supported: return a pointer");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, status>, "result<status> is just status");

 public:
  result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  /// @pre !error.is_ok(): an ok status carries no value.
  result(status error) : status_(std::move(error)) {  // NOLINT: implicit by design
    if (status_.is_ok()) status_ = status(status_code::internal, "result built from an ok status");
  }

  bool is_ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return is_ok(); }
  const status& error() const noexcept { return status_; }
  /// The status of the call: ok when there is a value.
  status to_status() const { return status_; }

  /// @pre is_ok()
  T& value() & noexcept {
    MNEMO_DASSERT(is_ok());
    return *value_;
  }
  const T& value() const& noexcept {
    MNEMO_DASSERT(is_ok());
    return *value_;
  }
  T&& value() && noexcept {
    MNEMO_DASSERT(is_ok());
    return std::move(*value_);
  }
  T* operator->() noexcept { return &value(); }
  const T* operator->() const noexcept { return &value(); }
  T& operator*() & noexcept { return value(); }
  const T& operator*() const& noexcept { return value(); }

  template <class U>
  T value_or(U&& fallback) const& {
    return is_ok() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::optional<T> value_;
  status status_;
};

}  // namespace mnemo

/// Declares `lhs` from a result-returning `expr`, or returns its error.
#define MNEMO_ASSIGN_OR_RETURN(lhs, expr) \
  MNEMO_ASSIGN_OR_RETURN_IMPL_(MNEMO_CONCAT_(mnemo_result_, __LINE__), lhs, expr)
#define MNEMO_CONCAT_INNER_(a, b) a##b
#define MNEMO_CONCAT_(a, b) MNEMO_CONCAT_INNER_(a, b)
#define MNEMO_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.is_ok()) return tmp.error();              \
  lhs = std::move(tmp).value()
