#include "wire/port_probe.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "gtest/gtest.h"
#include "wire/held_port.h"

namespace tandem {
namespace {

using ::tandem::testing::HeldPort;
using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

TEST(PortProbeTest, AHeldPortIsRefusedWhateverTheHostSpelling) {
  HeldPort held;
  ASSERT_GT(held.port(), 0);
  for (const std::string host : {"127.0.0.1", "localhost", "0.0.0.0", ""}) {
    const std::string address = absl::StrCat(host, ":", held.port());
    EXPECT_THAT(CheckPortFree(address),
                StatusIs(absl::StatusCode::kUnavailable,
                         ::testing::AllOf(HasSubstr(address), HasSubstr("already in use"))))
        << address;
  }
}

TEST(PortProbeTest, LeavesToGrpcWhatIsNotANumericPort) {
  for (const char* address : {"127.0.0.1:0", "unix:/tmp/tandem.sock", "localhost", "",
                              "127.0.0.1:http", "127.0.0.1:70000"}) {
    EXPECT_THAT(CheckPortFree(address), IsOk()) << address;
  }
}

TEST(PortProbeTest, AFreedPortIsFreeAgain) {
  int port = 0;
  {
    HeldPort held;
    port = held.port();
    ASSERT_GT(port, 0);
  }
  EXPECT_THAT(CheckPortFree(absl::StrCat("127.0.0.1:", port)), IsOk());
}

}  // namespace
}  // namespace tandem
