// Worker entries: which name a replica set and how getaddrinfo answers (only names that
// /etc/hosts and numeric addresses answer: no test sends a DNS query).
#include "services/coordinator/address_resolver.h"

#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct EntryCase {
  std::string entry;
  std::string name;
  bool resolved;
};

TEST(ParseWorkerEntryTest, NamesResolveAndAddressesStandForThemselves) {
  const std::vector<EntryCase> cases = {
      {"dns:///tandem-target.tandem.svc:50051", "tandem-target.tandem.svc:50051", true},
      {"dns://10.0.0.10:53/tandem-draft:50051", "tandem-draft:50051", true},
      {"dns:127.0.0.1:7", "127.0.0.1:7", true},  // asked for: resolved, to itself
      {"tandem-target:50051", "tandem-target:50051", true},
      {"localhost:5", "localhost:5", true},
      {"127.0.0.1:50051", "127.0.0.1:50051", false},
      {"[::1]:50051", "[::1]:50051", false},
      {"unix:/run/tandem/target.sock", "unix:/run/tandem/target.sock", false},
      {"ipv4:127.0.0.1:1,127.0.0.2:1", "ipv4:127.0.0.1:1,127.0.0.2:1", false},
  };
  for (const EntryCase& c : cases) {
    ASSERT_OK_AND_ASSIGN(WorkerEntry e, ParseWorkerEntry(c.entry));
    EXPECT_EQ(e.entry, c.entry);
    EXPECT_EQ(e.name, c.name) << c.entry;
    EXPECT_EQ(e.resolved, c.resolved) << c.entry;
  }
}

TEST(ParseWorkerEntryTest, AnEntryWithoutHostOrPortIsInvalidAndNamed) {
  for (const std::string bad : {"tandem-target", "dns:///tandem-target", ":50051",
                                "host:", "dns://authority-only", "[::1]50051", ""}) {
    EXPECT_THAT(ParseWorkerEntry(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'" + bad + "'")))
        << bad;
  }
}

TEST(GetaddrinfoResolverTest, ResolvesHostsFileNamesAndNumericAddresses) {
  GetaddrinfoResolver resolver;
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> local, resolver.Resolve("localhost:5051"));
  EXPECT_THAT(local, Contains("127.0.0.1:5051"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> v4, resolver.Resolve("127.0.0.2:7"));
  EXPECT_THAT(v4, ElementsAre("127.0.0.2:7"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> v6, resolver.Resolve("[::1]:8"));
  EXPECT_THAT(v6, ElementsAre("[::1]:8"));
}

TEST(GetaddrinfoResolverTest, NotHostPortIsInvalid) {
  GetaddrinfoResolver resolver;
  EXPECT_THAT(resolver.Resolve("localhost"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'localhost'")));
}

}  // namespace
}  // namespace tandem
