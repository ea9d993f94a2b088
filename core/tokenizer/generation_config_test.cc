#include "core/tokenizer/generation_config.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct EosCase {
  std::string name;
  std::string json;
  std::vector<int32_t> ids;
};

void PrintTo(const EosCase& c, std::ostream* os) { *os << c.name; }

class GenerationConfigEosIdsTest : public ::testing::TestWithParam<EosCase> {};

TEST_P(GenerationConfigEosIdsTest, ReadsTheIdsInOrder) {
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids, GenerationConfigEosIds(GetParam().json, 200));
  EXPECT_EQ(ids, GetParam().ids);
}

INSTANTIATE_TEST_SUITE_P(
    Families, GenerationConfigEosIdsTest,
    ::testing::Values(
        EosCase{"Llama31List",
                R"({"bos_token_id": 1, "eos_token_id": [101, 108, 109]})",
                {101, 108, 109}},
        EosCase{"QwenList", R"({"eos_token_id": [151, 150], "pad_token_id": 150})", {151, 150}},
        EosCase{"SingleId", R"({"eos_token_id": 2})", {2}},
        EosCase{"NullId", R"({"eos_token_id": null})", {}},
        EosCase{"NoKey", R"({"do_sample": true})", {}}),
    [](const ::testing::TestParamInfo<EosCase>& info) { return info.param.name; });

TEST(GenerationConfigEosIdsErrorTest, RefusesAnIdOutsideTheVocabulary) {
  EXPECT_THAT(GenerationConfigEosIds(R"({"eos_token_id": [1, 200]})", 200),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("eos_token_id 200 is outside the vocabulary of 200 tokens")));
  EXPECT_THAT(GenerationConfigEosIds(R"({"eos_token_id": -1})", 200),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("eos_token_id -1")));
}

TEST(GenerationConfigEosIdsErrorTest, RefusesANonIntegerOrANonObject) {
  EXPECT_THAT(GenerationConfigEosIds(R"({"eos_token_id": ["</s>"]})", 200),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("non-integer")));
  EXPECT_THAT(GenerationConfigEosIds("[1, 2]", 200),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not a JSON object")));
}

TEST(GenerationConfigEosIdsErrorTest, EmptyWhenAbsent) {
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids, GenerationConfigEosIds("{}", 10));
  EXPECT_THAT(ids, IsEmpty());
}

}  // namespace
}  // namespace tandem
