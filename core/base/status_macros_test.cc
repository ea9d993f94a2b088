#include "core/base/status_macros.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pointee;

absl::Status FailIf(bool fail) {
  return fail ? absl::DataLossError("bad magic") : absl::OkStatus();
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::Status ReturnIfErrorTwice(bool first, bool second, int* reached) {
  RETURN_IF_ERROR(FailIf(first));
  *reached = 1;
  RETURN_IF_ERROR(FailIf(second));
  *reached = 2;
  return absl::OkStatus();
}

absl::StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int half, Half(x));
  ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

absl::StatusOr<std::unique_ptr<int>> Boxed(int x) {
  if (x < 0) return absl::OutOfRangeError("negative");
  return std::make_unique<int>(x);
}

absl::StatusOr<int> UnboxAssignsExisting(int x) {
  std::unique_ptr<int> box;
  ASSIGN_OR_RETURN(box, Boxed(x));  // move-only value into an existing variable
  return *box;
}

TEST(ReturnIfErrorTest, PassesOkThroughAndStopsAtFirstError) {
  int reached = 0;
  EXPECT_THAT(ReturnIfErrorTwice(false, false, &reached), IsOk());
  EXPECT_EQ(reached, 2);
  reached = 0;
  EXPECT_THAT(ReturnIfErrorTwice(false, true, &reached),
              StatusIs(absl::StatusCode::kDataLoss, "bad magic"));
  EXPECT_EQ(reached, 1);
  reached = 0;
  EXPECT_THAT(ReturnIfErrorTwice(true, false, &reached), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_EQ(reached, 0);
}

TEST(AssignOrReturnTest, AssignsValuesAndPropagatesTheFirstError) {
  EXPECT_THAT(Quarter(12), IsOkAndHolds(3));
  EXPECT_THAT(Quarter(6), StatusIs(absl::StatusCode::kInvalidArgument, "odd"));
  EXPECT_THAT(Quarter(5), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(AssignOrReturnTest, MovesMoveOnlyValuesIntoExistingVariables) {
  EXPECT_THAT(UnboxAssignsExisting(7), IsOkAndHolds(7));
  EXPECT_THAT(UnboxAssignsExisting(-1), StatusIs(absl::StatusCode::kOutOfRange, "negative"));
}

TEST(StatusMatchersTest, MatchCodesMessagesAndValues) {
  EXPECT_THAT(absl::OkStatus(), IsOk());
  EXPECT_THAT(absl::NotFoundError("x"), Not(IsOk()));
  EXPECT_THAT(absl::NotFoundError("no session 7"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("session 7")));
  EXPECT_THAT(absl::NotFoundError("no session 7"),
              Not(StatusIs(absl::StatusCode::kInvalidArgument)));
  EXPECT_THAT(absl::NotFoundError("no session 7"),
              Not(StatusIs(absl::StatusCode::kNotFound, HasSubstr("session 8"))));
  EXPECT_THAT(absl::StatusOr<int>(5), IsOkAndHolds(5));
  EXPECT_THAT(absl::StatusOr<int>(5), Not(IsOkAndHolds(6)));
  EXPECT_THAT(absl::StatusOr<int>(absl::InternalError("boom")), Not(IsOkAndHolds(5)));
  EXPECT_THAT(Boxed(4), IsOkAndHolds(Pointee(4)));
}

TEST(StatusMatchersTest, AssertOkAndAssignBindsTheValue) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<int> box, Boxed(9));
  EXPECT_EQ(*box, 9);
  ASSERT_OK(FailIf(false));
  EXPECT_OK(absl::StatusOr<int>(1));
}

}  // namespace
}  // namespace tandem
