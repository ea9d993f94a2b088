#include "services/coordinator/reply_writer.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Token i decodes to kBytes[i]; 3 and 4 are the two halves of "é".
const std::vector<std::string> kBytes = {"a", "b", " c", "\xC3", "\xA9", "!"};

// A request's client: what it received, whether it accepts more, whether it cancelled.
class ReplyWriterTest : public ::testing::Test {
 protected:
  std::unique_ptr<ReplyWriter> Writer(std::vector<std::string> stop_strings = {},
                                      bool logprobs = false) {
    ReplyWriter::Options options;
    options.token_bytes = &kBytes;
    options.stop_strings = std::move(stop_strings);
    options.logprobs = logprobs;
    options.start = ReplyWriter::Clock::now();
    return std::make_unique<ReplyWriter>(std::move(options), write_, cancelled_, &metrics_);
  }

  std::vector<std::string> Texts() const {
    std::vector<std::string> texts;
    for (const v1::GenerateResponse& r : received_) {
      if (r.has_delta()) texts.push_back(r.delta().text());
    }
    return texts;
  }

  prometheus::Registry registry_;
  CoordinatorMetrics metrics_{registry_};
  std::vector<v1::GenerateResponse> received_;
  bool accepting_ = true;
  bool cancelled_flag_ = false;
  ReplyWriter::Write write_ = [this](const v1::GenerateResponse& r) {
    received_.push_back(r);
    return accepting_;
  };
  std::function<bool()> cancelled_ = [this] { return cancelled_flag_; };
};

TEST_F(ReplyWriterTest, StreamsEachRoundAsOneDelta) {
  auto writer = Writer();
  std::vector<int32_t> first = {0, 1};
  std::vector<int32_t> second = {2};
  EXPECT_TRUE(writer->Tokens(first));
  EXPECT_TRUE(writer->Tokens(second));
  ASSERT_EQ(received_.size(), 2u);
  EXPECT_THAT(received_[0].delta().token_ids(), ElementsAre(0, 1));
  EXPECT_EQ(received_[0].delta().text(), "ab");
  EXPECT_THAT(received_[1].delta().token_ids(), ElementsAre(2));
  EXPECT_EQ(received_[1].delta().text(), " c");
  EXPECT_EQ(metrics_.generated_tokens.Value(), 3);
  EXPECT_EQ(metrics_.time_to_first_token.Collect().histogram.sample_count, 1u);
  EXPECT_EQ(metrics_.inter_token_latency.Collect().histogram.sample_count, 1u);
}

TEST_F(ReplyWriterTest, HoldsBackASplitCharacterUntilItCompletes) {
  auto writer = Writer();
  std::vector<int32_t> first = {0, 3};
  std::vector<int32_t> second = {4};
  writer->Tokens(first);
  writer->Tokens(second);
  EXPECT_THAT(Texts(), ElementsAre("a", "\xC3\xA9"));
}

TEST_F(ReplyWriterTest, CutsTheRoundAfterTheTokenThatCompletesAStopString) {
  auto writer = Writer({"b"});
  std::vector<int32_t> tokens = {0, 1, 2, 5};
  EXPECT_FALSE(writer->Tokens(tokens));
  EXPECT_THAT(tokens, ElementsAre(0, 1));  // the rest count as never generated
  ASSERT_EQ(received_.size(), 1u);
  EXPECT_THAT(received_[0].delta().token_ids(), ElementsAre(0, 1));
  EXPECT_EQ(received_[0].delta().text(), "a");
  EXPECT_FALSE(writer->client_gone());
  EXPECT_EQ(metrics_.generated_tokens.Value(), 2);
}

TEST_F(ReplyWriterTest, FinishSendsTheHeldBackTextBeforeTheFinalMessage) {
  auto writer = Writer({"b c"});
  std::vector<int32_t> tokens = {0, 1};
  EXPECT_TRUE(writer->Tokens(tokens));  // "b" may start the stop string
  writer->Finish(RoundOutcome{}, "s", 1);
  EXPECT_THAT(Texts(), ElementsAre("a", "b"));
  ASSERT_EQ(received_.size(), 3u);
  EXPECT_TRUE(received_[2].has_final());
}

TEST_F(ReplyWriterTest, CopiesEachTokensLogprobsWithItsBytes) {
  auto writer = Writer({}, /*logprobs=*/true);
  v1::VerifyResult verdict;
  for (int32_t id : {2, 5}) {
    v1::TokenLogprobs* lp = verdict.add_logprobs();
    lp->mutable_token()->set_token_id(id);
    lp->mutable_token()->set_logprob(-0.5f * id);
  }
  writer->Verified(verdict);
  std::vector<int32_t> tokens = {2, 5};
  writer->Tokens(tokens);
  ASSERT_EQ(received_.size(), 1u);
  const v1::TokenDelta& delta = received_[0].delta();
  ASSERT_EQ(delta.logprobs_size(), 2);
  EXPECT_EQ(delta.logprobs(0).token().token_id(), 2);
  EXPECT_EQ(delta.logprobs(0).token().token_bytes(), " c");
  EXPECT_EQ(delta.logprobs(0).token().logprob(), -1.0f);
  EXPECT_EQ(delta.logprobs(1).token().token_bytes(), "!");
}

TEST_F(ReplyWriterTest, AFailedWriteMeansTheClientWentAway) {
  auto writer = Writer();
  accepting_ = false;
  std::vector<int32_t> tokens = {0};
  EXPECT_FALSE(writer->Tokens(tokens));
  EXPECT_TRUE(writer->client_gone());
}

TEST_F(ReplyWriterTest, ACancelledClientGetsNoMoreDeltas) {
  auto writer = Writer();
  cancelled_flag_ = true;
  std::vector<int32_t> tokens = {0};
  EXPECT_FALSE(writer->Tokens(tokens));
  EXPECT_TRUE(writer->client_gone());
  EXPECT_THAT(received_, IsEmpty());
}

TEST_F(ReplyWriterTest, FinalMessageCarriesTheOutcome) {
  auto writer = Writer();
  std::vector<int32_t> tokens = {0, 1, 2};
  writer->Tokens(tokens);
  RoundOutcome outcome;
  outcome.finish_reason = v1::FINISH_REASON_LENGTH;
  outcome.prompt_tokens = 11;
  outcome.cached_prompt_tokens = 4;
  outcome.generated = 3;
  outcome.prefill_seconds = 0.25;
  outcome.speculation.set_rounds(2);
  outcome.speculation.set_drafted_tokens(6);
  outcome.speculation.set_accepted_tokens(3);
  outcome.speculation.add_accepted_per_position(2);
  outcome.speculation.add_accepted_per_position(0);
  outcome.speculation.add_accepted_per_position(1);
  writer->Finish(outcome, "chat-7", 42);

  ASSERT_EQ(received_.size(), 2u);
  ASSERT_TRUE(received_[1].has_final());
  const v1::GenerationResult& r = received_[1].final();
  EXPECT_EQ(r.finish_reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(r.usage().prompt_tokens(), 11);
  EXPECT_EQ(r.usage().cached_prompt_tokens(), 4);
  EXPECT_EQ(r.usage().generated_tokens(), 3);
  EXPECT_EQ(r.timing().prefill_seconds(), 0.25);
  EXPECT_GE(r.timing().time_to_first_token_seconds(), 0);
  EXPECT_GE(r.timing().total_seconds(), r.timing().time_to_first_token_seconds());
  EXPECT_DOUBLE_EQ(r.timing().decode_seconds(),
                   r.timing().total_seconds() - r.timing().time_to_first_token_seconds());
  EXPECT_EQ(r.speculation().SerializeAsString(), outcome.speculation.SerializeAsString());
  EXPECT_EQ(r.session_id(), "chat-7");
  EXPECT_EQ(r.seed(), 42u);

  EXPECT_EQ(metrics_.prompt_tokens.Value(), 11);
  EXPECT_EQ(metrics_.cached_prompt_tokens.Value(), 4);
  EXPECT_EQ(metrics_.drafts.Value(), 2);
  EXPECT_EQ(metrics_.draft_tokens.Value(), 6);
  EXPECT_EQ(metrics_.accepted_tokens.Value(), 3);
  EXPECT_EQ(metrics_.AcceptedAtPosition(0).Value(), 2);
  EXPECT_EQ(metrics_.AcceptedAtPosition(2).Value(), 1);
}

TEST_F(ReplyWriterTest, FinalWithoutTokensHasNoTimeToFirstToken) {
  auto writer = Writer();
  writer->Finish(RoundOutcome{}, "oneoff-1", 0);
  ASSERT_EQ(received_.size(), 1u);
  EXPECT_EQ(received_[0].final().timing().time_to_first_token_seconds(), 0);
  EXPECT_EQ(received_[0].final().timing().decode_tokens_per_second(), 0);
  EXPECT_EQ(metrics_.time_to_first_token.Collect().histogram.sample_count, 0u);
}

}  // namespace
}  // namespace tandem
