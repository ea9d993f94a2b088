#include "services/coordinator/session_eviction.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1000);
absl::Time At(int seconds) { return kT0 + absl::Seconds(seconds); }

TEST(SessionsToEvictTest, LeastRecentlyUsedIdleSessionsGoUntilKeepRemain) {
  std::vector<SessionUse> sessions = {{"a", At(30)}, {"b", At(10)}, {"c", At(20)}, {"d", At(40)}};
  EXPECT_THAT(SessionsToEvict(sessions, 4, At(0)), IsEmpty());
  EXPECT_THAT(SessionsToEvict(sessions, 3, At(0)), ElementsAre("b"));
  EXPECT_THAT(SessionsToEvict(sessions, 1, At(0)), ElementsAre("b", "c", "a"));
}

TEST(SessionsToEvictTest, BusySessionsAreNeverChosen) {
  std::vector<SessionUse> sessions = {
      {"a", At(30)}, {"b", At(10), /*busy=*/true}, {"c", At(20), /*busy=*/true}};
  EXPECT_THAT(SessionsToEvict(sessions, 2, At(0)), ElementsAre("a"));
  EXPECT_THAT(SessionsToEvict(sessions, 0, At(100)), ElementsAre("a"));  // only a is idle
}

TEST(SessionsToEvictTest, IdleSessionsPastTheCutoffGoWhateverTheRoom) {
  std::vector<SessionUse> sessions = {{"a", At(30)}, {"b", At(10)}, {"c", At(20), true}};
  EXPECT_THAT(SessionsToEvict(sessions, 10, At(25)), ElementsAre("b"));  // c is busy
  EXPECT_THAT(SessionsToEvict(sessions, 10, At(31)), ElementsAre("b", "a"));
}

TEST(SessionsToEvictTest, TiesGoByIdSoTheChoiceIsDeterministic) {
  std::vector<SessionUse> sessions = {{"y", At(5)}, {"x", At(5)}, {"z", At(5)}};
  EXPECT_THAT(SessionsToEvict(sessions, 1, At(0)), ElementsAre("x", "y"));
}

}  // namespace
}  // namespace tandem
