// gMock matchers for absl::Status and absl::StatusOr<T> (test-only):
//
//   EXPECT_THAT(status, IsOk());
//   EXPECT_THAT(F(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("magic")));
//   EXPECT_THAT(G(), IsOkAndHolds(42));
//   ASSERT_OK_AND_ASSIGN(auto model, LoadModel(path));
#ifndef TANDEM_CORE_BASE_STATUS_MATCHERS_H_
#define TANDEM_CORE_BASE_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::testing {
namespace internal {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// Matches a Status or StatusOr whose code and message match the inner matchers.
class StatusIsMatcher {
 public:
  StatusIsMatcher(::testing::Matcher<absl::StatusCode> code,
                  ::testing::Matcher<const std::string&> message)
      : code_(std::move(code)), message_(std::move(message)) {}

  template <typename StatusType>
  bool MatchAndExplain(const StatusType& value, ::testing::MatchResultListener* listener) const {
    const absl::Status& status = GetStatus(value);
    *listener << "whose status is " << status;
    return code_.Matches(status.code()) && message_.Matches(std::string(status.message()));
  }
  void DescribeTo(std::ostream* os) const {
    *os << "has a status code that ";
    code_.DescribeTo(os);
    *os << " and a message that ";
    message_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "does not have a status code that ";
    code_.DescribeTo(os);
    *os << " or a message that ";
    message_.DescribeTo(os);
  }

 private:
  ::testing::Matcher<absl::StatusCode> code_;
  ::testing::Matcher<const std::string&> message_;
};

// Matches an OK StatusOr<T> whose value matches the inner matcher (monomorphic per T).
template <typename StatusOrType>
class IsOkAndHoldsMatcherImpl : public ::testing::MatcherInterface<const StatusOrType&> {
 public:
  using ValueType = typename std::decay_t<StatusOrType>::value_type;

  template <typename InnerMatcher>
  explicit IsOkAndHoldsMatcherImpl(InnerMatcher&& inner)
      : inner_(::testing::SafeMatcherCast<const ValueType&>(std::forward<InnerMatcher>(inner))) {}

  bool MatchAndExplain(const StatusOrType& value,
                       ::testing::MatchResultListener* listener) const override {
    if (!value.ok()) {
      *listener << "whose status is " << value.status();
      return false;
    }
    return inner_.MatchAndExplain(*value, listener);
  }
  void DescribeTo(std::ostream* os) const override {
    *os << "is OK and holds a value that ";
    inner_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "is not OK or holds a value that ";
    inner_.DescribeNegationTo(os);
  }

 private:
  ::testing::Matcher<const ValueType&> inner_;
};

template <typename InnerMatcher>
class IsOkAndHoldsMatcher {
 public:
  explicit IsOkAndHoldsMatcher(InnerMatcher inner) : inner_(std::move(inner)) {}

  template <typename StatusOrType>
  operator ::testing::Matcher<StatusOrType>() const {  // NOLINT: implicit by design
    return ::testing::Matcher<StatusOrType>(
        new IsOkAndHoldsMatcherImpl<const StatusOrType&>(inner_));
  }

 private:
  InnerMatcher inner_;
};

}  // namespace internal

inline ::testing::PolymorphicMatcher<internal::StatusIsMatcher> StatusIs(
    ::testing::Matcher<absl::StatusCode> code,
    ::testing::Matcher<const std::string&> message = ::testing::_) {
  return ::testing::MakePolymorphicMatcher(
      internal::StatusIsMatcher(std::move(code), std::move(message)));
}

inline ::testing::PolymorphicMatcher<internal::StatusIsMatcher> IsOk() {
  return StatusIs(absl::StatusCode::kOk);
}

template <typename InnerMatcher>
internal::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>> IsOkAndHolds(InnerMatcher&& inner) {
  return internal::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>>(
      std::forward<InnerMatcher>(inner));
}

}  // namespace tandem::testing

#define ASSERT_OK(expr) ASSERT_THAT((expr), ::tandem::testing::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT((expr), ::tandem::testing::IsOk())

#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                                           \
  TANDEM_ASSERT_OK_AND_ASSIGN_IMPL(TANDEM_STATUS_CONCAT(tandem_assert_status_or_, __LINE__), lhs, \
                                   expr)
#define TANDEM_ASSERT_OK_AND_ASSIGN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                                     \
  ASSERT_TRUE(statusor.ok()) << statusor.status();            \
  lhs = std::move(statusor).value()

#endif  // TANDEM_CORE_BASE_STATUS_MATCHERS_H_
