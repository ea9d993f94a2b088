#include "services/coordinator/public_status.h"

#include <ostream>
#include <string>

#include "core/base/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;

const Redactions kNames = {
    {"10.0.0.7:5005", "target-1"}, {"10.0.0.7:50051", "target-0"},
    {"10.0.0.9:50052", "draft-0"}, {"/srv/models/stories260K.gguf", "'stories260K'"},
    {"[::1]:7002", "draft-1"},     {"", "never"}};

struct Case {
  const char* name;
  absl::Status in;
  absl::Status out;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PublicStatusTest : public ::testing::TestWithParam<Case> {};

TEST_P(PublicStatusTest, KeepsTheCodeAndHidesInternalNames) {
  const Case& c = GetParam();
  EXPECT_THAT(PublicStatus(c.in, kNames), StatusIs(c.out.code(), std::string(c.out.message())));
}

INSTANTIATE_TEST_SUITE_P(
    Messages, PublicStatusTest,
    ::testing::Values(
        Case{"WorkerAddress", absl::UnavailableError("worker 10.0.0.7:50051 failed: stream ended"),
             absl::UnavailableError("worker target-0 failed: stream ended")},
        Case{"LongerAddressReplacedWhole",
             absl::UnavailableError("worker 10.0.0.7:50051 and 10.0.0.7:5005"),
             absl::UnavailableError("worker target-0 and target-1")},
        Case{"DraftAndPath",
             absl::FailedPreconditionError(
                 "draft 10.0.0.9:50052 vs /srv/models/stories260K.gguf at 10.0.0.9:50052"),
             absl::FailedPreconditionError("draft draft-0 vs 'stories260K' at draft-0")},
        Case{"Ipv6AddressAsGiven", absl::UnavailableError("worker [::1]:7002 failed"),
             absl::UnavailableError("worker draft-1 failed")},
        Case{"Ipv6AddressPercentEncodedByGrpc",
             absl::UnavailableError("failed to connect to all addresses; last error: "
                                    "UNKNOWN: ipv6:%5B::1%5D:7002: Failed to connect"),
             absl::UnavailableError("failed to connect to all addresses; last error: "
                                    "UNKNOWN: ipv6:draft-1: Failed to connect")},
        Case{"Ipv6AddressLowerCaseEncoding", absl::UnavailableError("ipv6:%5b::1%5d:7002"),
             absl::UnavailableError("ipv6:draft-1")},
        Case{"NothingInternal", absl::InvalidArgumentError("max_tokens -1 < 0"),
             absl::InvalidArgumentError("max_tokens -1 < 0")}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(PublicStatusOkTest, OkStaysOk) { EXPECT_TRUE(PublicStatus(absl::OkStatus(), kNames).ok()); }

}  // namespace
}  // namespace tandem
