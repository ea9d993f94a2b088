// A worker dialled at a pod IP is addressed by the name it was resolved from: the :authority
// a worker sees (and, with TLS, the name its certificate is checked against).
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/base/status_matchers.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "services/coordinator/worker_client.h"

namespace tandem {
namespace {

// Remembers the :authority of the last Describe.
class AuthorityWorker final : public v1::Worker::Service {
 public:
  grpc::Status Describe(grpc::ServerContext* context, const v1::DescribeRequest*,
                        v1::DescribeResponse*) override {
    absl::MutexLock lock(&mutex);
    authority = std::string(context->ExperimentalGetAuthority().data(),
                            context->ExperimentalGetAuthority().size());
    return grpc::Status::OK;
  }
  absl::Mutex mutex;
  std::string authority ABSL_GUARDED_BY(mutex);
};

TEST(WorkerClientAuthorityTest, APodDialledByAddressIsAddressedByItsServiceName) {
  AuthorityWorker worker;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&worker);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  const std::string address = absl::StrCat("127.0.0.1:", port);

  WorkerClientOptions named;
  named.authority = "tandem-target.tandem.svc:50051";
  WorkerClient by_name(address, named);
  ASSERT_OK(by_name.Describe(false, absl::Seconds(5)).status());
  {
    absl::MutexLock lock(&worker.mutex);
    EXPECT_EQ(worker.authority, "tandem-target.tandem.svc:50051");
  }
  WorkerClient by_address(address);
  ASSERT_OK(by_address.Describe(false, absl::Seconds(5)).status());
  {
    absl::MutexLock lock(&worker.mutex);
    EXPECT_EQ(worker.authority, address);
  }
  server->Shutdown();
}

}  // namespace
}  // namespace tandem
