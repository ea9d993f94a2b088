// Pins the shape of the wire contract: services, methods and their streaming kinds, enum
// zeros, and that messages survive a serialisation round trip.
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "tandem/v1/generator.grpc.pb.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem {
namespace {

using ::google::protobuf::DescriptorPool;
using ::google::protobuf::FileDescriptor;
using ::google::protobuf::MethodDescriptor;

struct MethodCase {
  const char* service;
  const char* method;
  bool client_streaming;
  bool server_streaming;
};

class ServiceShapeTest : public ::testing::TestWithParam<MethodCase> {};

TEST_P(ServiceShapeTest, MethodHasItsStreamingKind) {
  const MethodCase& c = GetParam();
  const MethodDescriptor* method = DescriptorPool::generated_pool()->FindMethodByName(
      std::string("tandem.v1.") + c.service + "." + c.method);
  ASSERT_NE(method, nullptr) << c.service << "." << c.method;
  EXPECT_EQ(method->client_streaming(), c.client_streaming);
  EXPECT_EQ(method->server_streaming(), c.server_streaming);
}

INSTANTIATE_TEST_SUITE_P(Contract, ServiceShapeTest,
                         ::testing::Values(MethodCase{"Generator", "Generate", false, true},
                                           MethodCase{"Generator", "Tokenize", false, false},
                                           MethodCase{"Generator", "DescribeModel", false, false},
                                           MethodCase{"Generator", "CloseSession", false, false},
                                           MethodCase{"Worker", "Describe", false, false},
                                           MethodCase{"Worker", "Tokenize", false, false},
                                           MethodCase{"Worker", "Attach", true, true}),
                         [](const ::testing::TestParamInfo<MethodCase>& info) {
                           return std::string(info.param.service) + info.param.method;
                         });

TEST(ProtoContractTest, EveryEnumStartsWithUnspecifiedZero) {
  for (const char* file :
       {"tandem/v1/common.proto", "tandem/v1/generator.proto", "tandem/v1/worker.proto"}) {
    const FileDescriptor* fd = DescriptorPool::generated_pool()->FindFileByName(file);
    ASSERT_NE(fd, nullptr) << file;
    EXPECT_EQ(fd->package(), "tandem.v1");
    for (int i = 0; i < fd->enum_type_count(); ++i) {
      const auto* e = fd->enum_type(i);
      ASSERT_GT(e->value_count(), 0);
      EXPECT_EQ(e->value(0)->number(), 0) << e->full_name();
      EXPECT_THAT(e->value(0)->name(), ::testing::EndsWith("_UNSPECIFIED")) << e->full_name();
    }
  }
}

TEST(ProtoContractTest, GenerateRequestRoundTripsThroughTheWire) {
  v1::GenerateRequest request;
  auto* message = request.mutable_chat()->add_messages();
  message->set_role("user");
  message->set_content("Once upon a time");
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_sampling()->set_seed(42);
  request.set_max_tokens(32);
  request.mutable_speculation()->set_draft_tokens(4);
  request.set_session_id("s1");

  v1::GenerateRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(request.SerializeAsString()));
  ASSERT_EQ(parsed.prompt_case(), v1::GenerateRequest::kChat);
  EXPECT_EQ(parsed.chat().messages(0).content(), "Once upon a time");
  // `optional`: an explicit 0 (greedy) differs from unset (server default).
  EXPECT_TRUE(parsed.sampling().has_temperature());
  EXPECT_EQ(parsed.sampling().temperature(), 0.0f);
  EXPECT_FALSE(parsed.sampling().has_top_p());
  EXPECT_EQ(parsed.sampling().seed(), 42u);
  EXPECT_EQ(parsed.speculation().draft_tokens(), 4);
  EXPECT_EQ(parsed.session_id(), "s1");
}

TEST(ProtoContractTest, SessionMessagesCarryOneRequestEach) {
  v1::SessionRequest request;
  request.set_request_id(7);
  auto* verify = request.mutable_verify();
  verify->set_position(12);
  verify->set_pending_token(403);
  auto* guess = verify->add_guesses();
  guess->set_token_id(407);
  guess->mutable_distribution()->add_token_ids(407);
  guess->mutable_distribution()->add_probabilities(1.0f);

  v1::SessionRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(request.SerializeAsString()));
  EXPECT_EQ(parsed.request_id(), 7u);
  ASSERT_EQ(parsed.request_case(), v1::SessionRequest::kVerify);
  EXPECT_EQ(parsed.verify().guesses(0).distribution().probabilities(0), 1.0f);
  // Setting another member of the oneof replaces the first.
  parsed.mutable_sync()->set_position(3);
  EXPECT_EQ(parsed.request_case(), v1::SessionRequest::kSync);
  EXPECT_FALSE(parsed.has_verify());
}

}  // namespace
}  // namespace tandem
