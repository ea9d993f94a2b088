#include "services/common/port_probe.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// A TCP socket listening on a loopback port the OS chose.
class HeldPort {
 public:
  HeldPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~HeldPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

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
