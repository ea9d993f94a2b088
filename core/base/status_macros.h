// The two status macros the whole code base uses (Debian's abseil 20220623 has none).
//
//   RETURN_IF_ERROR(expr);             // returns the status of `expr` if it is not OK
//   ASSIGN_OR_RETURN(lhs, expr);       // lhs = *expr, or returns expr's status
//
// `lhs` may declare a variable (`ASSIGN_OR_RETURN(auto x, F())`) or name an existing one.
#ifndef TANDEM_CORE_BASE_STATUS_MACROS_H_
#define TANDEM_CORE_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RETURN_IF_ERROR(expr)                                   \
  do {                                                          \
    ::absl::Status tandem_status_macro_status = (expr);         \
    if (ABSL_PREDICT_FALSE(!tandem_status_macro_status.ok())) { \
      return tandem_status_macro_status;                        \
    }                                                           \
  } while (false)

#define TANDEM_STATUS_CONCAT_INNER(a, b) a##b
#define TANDEM_STATUS_CONCAT(a, b) TANDEM_STATUS_CONCAT_INNER(a, b)

#define ASSIGN_OR_RETURN(lhs, expr) \
  TANDEM_ASSIGN_OR_RETURN_IMPL(TANDEM_STATUS_CONCAT(tandem_status_or_value_, __LINE__), lhs, expr)

#define TANDEM_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                                 \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) {               \
    return std::move(statusor).status();                  \
  }                                                       \
  lhs = std::move(statusor).value()

#endif  // TANDEM_CORE_BASE_STATUS_MACROS_H_
