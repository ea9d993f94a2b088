// Issue #10, item 1: no request can crash a worker. Every field of a SessionRequest (and of
// Tokenize and Open) that comes from outside, at its edges and beyond, sent over real gRPC
// (in process): each answers a RequestError with the exact code (or a correct result), and
// the session still serves a valid request afterwards.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "gtest/gtest.h"
#include "workers/worker_server_test_util.h"
#include "workers/worker_service.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

constexpr int32_t kVocab = 512;   // stories260K
constexpr int32_t kContext = 64;  // the worker's context in these tests
constexpr int32_t kIntMax = std::numeric_limits<int32_t>::max();
constexpr int32_t kIntMin = std::numeric_limits<int32_t>::min();
const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

using Stream = testing::SessionStream;

class HostileSessionRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::TestServerOptions options;
    options.context_size = kContext;
    options.max_sessions = 2;
    ASSERT_OK(testing::StartTestWorkerServer(options, &worker_));
  }
  void TearDown() override {
    if (worker_.server != nullptr) worker_.server->Shutdown();
  }

  // One request, one answer; a broken stream is a test failure (the worker died or hung up).
  v1::SessionResponse Call(Stream& stream, v1::SessionRequest request) {
    request.set_request_id(++next_id_);
    return testing::Exchange(stream, request);
  }

  testing::TestWorkerServer worker_;
  uint64_t next_id_ = 0;
};

v1::SessionRequest Sync(int32_t position, const std::vector<int32_t>& tokens) {
  v1::SessionRequest r;
  r.mutable_sync()->set_position(position);
  for (int32_t t : tokens) r.mutable_sync()->add_tokens(t);
  return r;
}

v1::SessionRequest Draft(int32_t position, const std::vector<int32_t>& tokens, int32_t k,
                         const std::function<void(v1::SamplingParams*)>& sampling = {}) {
  v1::SessionRequest r;
  v1::DraftRequest* d = r.mutable_draft();
  d->set_position(position);
  for (int32_t t : tokens) d->add_tokens(t);
  d->set_num_tokens(k);
  if (sampling) sampling(d->mutable_sampling());
  return r;
}

struct Guess {
  int32_t id;
  std::vector<int32_t> q_ids;
  std::vector<float> q;
};

v1::SessionRequest Verify(int32_t position, const std::vector<int32_t>& tokens, int32_t pending,
                          const std::vector<Guess>& guesses,
                          const std::function<void(v1::SamplingParams*)>& sampling = {}) {
  v1::SessionRequest r;
  v1::VerifyRequest* v = r.mutable_verify();
  v->set_position(position);
  for (int32_t t : tokens) v->add_tokens(t);
  v->set_pending_token(pending);
  for (const Guess& g : guesses) {
    v1::DraftToken* d = v->add_guesses();
    d->set_token_id(g.id);
    for (int32_t id : g.q_ids) d->mutable_distribution()->add_token_ids(id);
    for (float p : g.q) d->mutable_distribution()->add_probabilities(p);
  }
  if (sampling) sampling(v->mutable_sampling());
  return r;
}

std::vector<int32_t> Tokens(int n) { return std::vector<int32_t>(n, 403); }

v1::SessionRequest Constrain(const std::string& grammar, int32_t start,
                             const std::vector<int32_t>& end_ids = {2}) {
  v1::SessionRequest r;
  r.mutable_constrain()->mutable_constraint()->set_grammar(grammar);
  r.mutable_constrain()->set_start_position(start);
  for (int32_t id : end_ids) r.mutable_constrain()->add_end_ids(id);
  return r;
}

struct Case {
  std::string name;
  v1::SessionRequest request;
  absl::StatusCode code;  // kOk: a result, checked by `check`
  std::string message;    // a substring of the error
  std::function<void(const v1::SessionResponse&)> check = {};
};

std::vector<Case> Cases() {
  using C = absl::StatusCode;
  const auto greedy = [](v1::SamplingParams* s) { s->set_temperature(0); };
  const auto in_vocab = [](const v1::SessionResponse& r) {
    ASSERT_TRUE(r.has_verify());
    EXPECT_GE(r.verify().next_token(), 0);
    EXPECT_LT(r.verify().next_token(), kVocab);
  };
  const auto guesses_in_vocab = [](int max) {
    return [max](const v1::SessionResponse& r) {
      ASSERT_TRUE(r.has_draft());
      EXPECT_LE(r.draft().guesses_size(), max);
      for (const v1::DraftToken& g : r.draft().guesses()) {
        EXPECT_GE(g.token_id(), 0);
        EXPECT_LT(g.token_id(), kVocab);
      }
    };
  };
  // Every session starts with [1, 403, 407] cached.
  return {
      {"sync negative position", Sync(-1, {1}), C::kInvalidArgument, "position -1"},
      {"sync position INT_MAX", Sync(kIntMax, {1}), C::kInvalidArgument, "position 2147483647"},
      {"sync position past the cache", Sync(4, {1}), C::kInvalidArgument, "position 4"},
      {"sync negative token", Sync(3, {5, -1}), C::kInvalidArgument, "token -1 at index 1"},
      {"sync token = vocab", Sync(3, {kVocab}), C::kInvalidArgument, "token 512"},
      {"sync token INT_MIN", Sync(0, {kIntMin}), C::kInvalidArgument, "token -2147483648"},
      {"sync past the context", Sync(3, Tokens(kContext - 2)), C::kOutOfRange, "context of 64"},
      {"draft zero tokens", Draft(3, {5}, 0), C::kInvalidArgument, "draft tokens 0"},
      {"draft negative tokens", Draft(3, {5}, -5), C::kInvalidArgument, "draft tokens -5"},
      {"draft INT_MAX tokens", Draft(3, {5}, kIntMax), C::kInvalidArgument, "draft tokens 2147"},
      {"draft no pending token", Draft(3, {}, 2), C::kInvalidArgument, "pending token"},
      {"draft position past the cache", Draft(9, {5}, 2), C::kInvalidArgument, "position 9"},
      {"draft negative position", Draft(-3, {5}, 2), C::kInvalidArgument, "position -3"},
      {"draft pending out of vocabulary", Draft(3, {kVocab + 1000}, 2), C::kInvalidArgument,
       "token 1512"},
      {"draft more than the context left", Draft(3, Tokens(kContext - 4), 8), C::kOk, "",
       guesses_in_vocab(1)},
      {"draft with the context full", Draft(3, Tokens(kContext - 3), 8), C::kOk, "",
       guesses_in_vocab(0)},
      {"draft temperature NaN", Draft(3, {5}, 2, [](auto* s) { s->set_temperature(kNan); }),
       C::kInvalidArgument, "temperature"},
      {"draft temperature -1", Draft(3, {5}, 2, [](auto* s) { s->set_temperature(-1); }),
       C::kInvalidArgument, "temperature"},
      {"draft temperature inf", Draft(3, {5}, 2, [](auto* s) { s->set_temperature(kInf); }),
       C::kInvalidArgument, "temperature"},
      {"draft top_k -1", Draft(3, {5}, 2, [](auto* s) { s->set_top_k(-1); }), C::kInvalidArgument,
       "top_k"},
      {"draft top_p 0", Draft(3, {5}, 2, [](auto* s) { s->set_top_p(0); }), C::kInvalidArgument,
       "top_p"},
      {"draft top_p NaN", Draft(3, {5}, 2, [](auto* s) { s->set_top_p(kNan); }),
       C::kInvalidArgument, "top_p"},
      {"draft top_p 1.5", Draft(3, {5}, 2, [](auto* s) { s->set_top_p(1.5f); }),
       C::kInvalidArgument, "top_p"},
      {"draft min_p 1", Draft(3, {5}, 2, [](auto* s) { s->set_min_p(1); }), C::kInvalidArgument,
       "min_p"},
      {"draft min_p NaN", Draft(3, {5}, 2, [](auto* s) { s->set_min_p(kNan); }),
       C::kInvalidArgument, "min_p"},
      {"draft penalty 0", Draft(3, {5}, 2, [](auto* s) { s->set_repetition_penalty(0); }),
       C::kInvalidArgument, "repetition_penalty"},
      {"draft penalty NaN", Draft(3, {5}, 2, [](auto* s) { s->set_repetition_penalty(kNan); }),
       C::kInvalidArgument, "repetition_penalty"},
      {"draft penalty window -1", Draft(3, {5}, 2, [](auto* s) { s->set_penalty_window(-1); }),
       C::kInvalidArgument, "penalty_window"},
      {"draft extreme but valid sampling",
       Draft(3, {5}, 4,
             [](v1::SamplingParams* s) {
               s->set_temperature(1e30f);
               s->set_top_k(kIntMax);
               s->set_top_p(1e-30f);
               s->set_min_p(0.999f);
               s->set_repetition_penalty(1e-38f);
               s->set_penalty_window(kIntMax);
               s->set_seed(~uint64_t{0});
             }),
       C::kOk, "", guesses_in_vocab(4)},
      {"verify negative pending", Verify(3, {}, -1, {}), C::kInvalidArgument, "token -1"},
      {"verify pending = vocab", Verify(3, {}, kVocab, {}), C::kInvalidArgument, "token 512"},
      {"verify position past the cache", Verify(7, {}, 5, {}), C::kInvalidArgument, "position 7"},
      {"verify negative position", Verify(kIntMin, {}, 5, {}), C::kInvalidArgument,
       "position -2147483648"},
      {"verify negative guess", Verify(3, {}, 5, {{-1, {-1}, {1}}}), C::kInvalidArgument,
       "guess 0: distribution token id -1"},
      {"verify guess INT_MAX", Verify(3, {}, 5, {{kIntMax, {kIntMax}, {1}}}), C::kInvalidArgument,
       "guess 0: distribution token id 2147483647"},
      {"verify guess beyond the target's vocabulary is rejected",
       Verify(3, {}, 5, {{kVocab + 7, {kVocab + 7}, {1}}}, greedy), C::kOk, "",
       [in_vocab](const v1::SessionResponse& r) {
         in_vocab(r);
         EXPECT_EQ(r.verify().accepted_count(), 0);
       }},
      {"verify guess without a distribution", Verify(3, {}, 5, {{7, {}, {}}}), C::kInvalidArgument,
       "guess 0: distribution has no tokens"},
      {"verify distribution lengths differ", Verify(3, {}, 5, {{7, {7, 8}, {1}}}),
       C::kInvalidArgument, "2 ids but 1 probabilities"},
      {"verify 65 guesses", Verify(3, {}, 5, std::vector<Guess>(65, Guess{7, {7}, {1}})),
       C::kInvalidArgument, "65 guesses (at most 64)"},
      {"verify more guesses than the context left",
       Verify(3, Tokens(kContext - 5), 5, std::vector<Guess>(5, Guess{403, {403}, {1}}), greedy),
       C::kOk, "",
       [in_vocab](const v1::SessionResponse& r) {
         in_vocab(r);
         EXPECT_LE(r.verify().accepted_count(), 1);
       }},
      {"verify with the context full",
       Verify(3, Tokens(kContext - 4), 5, {{403, {403}, {1}}}, greedy), C::kOk, "",
       [in_vocab](const v1::SessionResponse& r) {
         in_vocab(r);
         EXPECT_EQ(r.verify().accepted_count(), 0);
       }},
      {"verify past the context", Verify(3, Tokens(kContext - 3), 5, {}), C::kOutOfRange,
       "context of 64"},
      {"verify top_logprobs 21",
       [] {
         v1::SessionRequest r = Verify(3, {}, 5, {});
         r.mutable_verify()->set_logprobs(true);
         r.mutable_verify()->set_top_logprobs(21);
         return r;
       }(),
       C::kInvalidArgument, "top_logprobs 21 is outside [0, 20]"},
      {"verify logprobs with a rejected out-of-vocabulary guess",
       [greedy] {
         v1::SessionRequest r = Verify(3, {}, 5, {{kVocab + 7, {kVocab + 7}, {1}}}, greedy);
         r.mutable_verify()->set_logprobs(true);
         r.mutable_verify()->set_top_logprobs(20);
         return r;
       }(),
       C::kOk, "",
       [](const v1::SessionResponse& r) {
         ASSERT_TRUE(r.has_verify());
         ASSERT_EQ(r.verify().logprobs_size(), 1);  // accepted 0, then the next token
         const v1::TokenLogprobs& l = r.verify().logprobs(0);
         EXPECT_EQ(l.token().token_id(), r.verify().next_token());
         ASSERT_EQ(l.top_size(), 20);
         EXPECT_EQ(l.top(0).token_id(), r.verify().next_token());  // greedy: the most likely
         EXPECT_LE(l.token().logprob(), 0.f);
       }},
      {"verify sampling top_p 2", Verify(3, {}, 5, {}, [](auto* s) { s->set_top_p(2); }),
       C::kInvalidArgument, "top_p"},
      {"constrain a grammar that does not parse", Constrain("root ::= (", 3), C::kInvalidArgument,
       "GBNF"},
      {"constrain a negative start", Constrain("root ::= \"a\"", -1), C::kInvalidArgument,
       "start_position -1 < 0"},
      {"constrain end ids outside the vocabulary are ignored",
       Constrain("root ::= \"a\"", 3, {-1, kVocab, kIntMax}), C::kOk, "",
       [](const v1::SessionResponse& r) { EXPECT_TRUE(r.has_constrained()); }},
      {"constrain a start past the context", Constrain("root ::= \"a\"", kIntMax), C::kOk, "",
       [](const v1::SessionResponse& r) { EXPECT_TRUE(r.has_constrained()); }},
      {"request with nothing set", v1::SessionRequest(), C::kInvalidArgument,
       "expected sync, constrain, draft, verify or close"},
      {"a second open",
       [] {
         v1::SessionRequest r;
         r.mutable_open()->set_context_size(-5);
         return r;
       }(),
       C::kInvalidArgument, "expected sync, constrain, draft, verify or close"},
  };
}

TEST_F(HostileSessionRequestTest, EachHostileRequestGetsItsCodeAndTheSessionStillServes) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    grpc::ClientContext context;
    auto stream = worker_.stub->Attach(&context);
    v1::SessionRequest open;
    open.mutable_open()->set_session_id("hostile");
    ASSERT_TRUE(Call(*stream, open).has_opened());
    ASSERT_EQ(Call(*stream, Sync(0, {1, 403, 407})).sync().cached_tokens(), 3);

    const v1::SessionResponse response = Call(*stream, c.request);
    if (c.code == absl::StatusCode::kOk) {
      ASSERT_FALSE(response.has_error()) << response.error().message();
      c.check(response);
    } else {
      ASSERT_TRUE(response.has_error());
      EXPECT_EQ(response.error().code(), static_cast<int>(c.code)) << response.error().message();
      EXPECT_THAT(response.error().message(), HasSubstr(c.message));
    }
    // The stream and the session survive: a valid sync after the first two cached tokens.
    const v1::SessionResponse after = Call(*stream, Sync(2, {407, 261}));
    ASSERT_FALSE(after.has_error()) << after.error().message();
    EXPECT_EQ(after.sync().cached_tokens(), 4);
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
}

// Tokens the constraint refuses where they stand (here the pending token, the first
// constrained one) are an INVALID_ARGUMENT naming it; the session serves on.
TEST_F(HostileSessionRequestTest, AVerifyOfTokensTheConstraintRefusesIsInvalidArgument) {
  grpc::ClientContext context;
  auto stream = worker_.stub->Attach(&context);
  v1::SessionRequest open;
  open.mutable_open();
  ASSERT_TRUE(Call(*stream, open).has_opened());
  ASSERT_TRUE(Call(*stream, Constrain("root ::= \"zz\"", 3)).has_constrained());
  v1::SessionResponse response =
      Call(*stream, Verify(0, {1, 403, 407}, 5, {}, [](auto* s) { s->set_temperature(0); }));
  ASSERT_TRUE(response.has_error());
  EXPECT_EQ(response.error().code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(response.error().message(),
            "token 5 at output index 0 is not allowed by the constraint");
  response = Call(*stream, Draft(0, {1, 403, 407, 5}, 4));
  ASSERT_TRUE(response.has_draft()) << response.error().message();
  EXPECT_EQ(response.draft().guesses_size(), 0);  // a draft only proposes: none after a refusal
  const v1::SessionResponse after = Call(*stream, Sync(2, {407, 261}));
  EXPECT_EQ(after.sync().cached_tokens(), 4);
}

TEST_F(HostileSessionRequestTest, ADraftBeforeAnySyncDraftsFromThePendingToken) {
  grpc::ClientContext context;
  auto stream = worker_.stub->Attach(&context);
  v1::SessionRequest open;
  open.mutable_open();
  ASSERT_TRUE(Call(*stream, open).has_opened());
  const v1::SessionResponse early = Call(*stream, Draft(1, {403}, 2));
  ASSERT_TRUE(early.has_error());
  EXPECT_EQ(early.error().code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(early.error().message(), HasSubstr("position 1 is outside [0, 0]"));
  const v1::SessionResponse drafted =
      Call(*stream, Draft(0, {1}, 3, [](v1::SamplingParams* s) { s->set_temperature(0); }));
  ASSERT_TRUE(drafted.has_draft()) << drafted.error().message();
  EXPECT_EQ(drafted.draft().guesses_size(), 3);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(HostileSessionRequestTest, AnOpenWithAContextOutsideTheWorkersIsRefused) {
  for (int32_t context_size : {-1, kContext + 1, kIntMax, kIntMin}) {
    SCOPED_TRACE(context_size);
    grpc::ClientContext context;
    auto stream = worker_.stub->Attach(&context);
    v1::SessionRequest open;
    open.mutable_open()->set_context_size(context_size);
    EXPECT_TRUE(stream->Write(open));
    v1::SessionResponse response;
    EXPECT_FALSE(stream->Read(&response));
    const grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("outside [0, 64]"));
  }
  EXPECT_EQ(worker_.engine->active_sessions(), 0);
}

TEST_F(HostileSessionRequestTest, TokenizeWithOddInputsAnswersWithoutDying) {
  struct TokenizeCase {
    std::string name;
    v1::TokenizeRequest request;
    grpc::StatusCode code;
    std::string message;
  };
  std::vector<TokenizeCase> cases;
  cases.push_back({"nothing set", v1::TokenizeRequest(), grpc::StatusCode::INVALID_ARGUMENT,
                   "set `text` or `chat`"});
  {
    v1::TokenizeRequest r;
    r.set_text(std::string("a\0b\x01\x7f", 5));
    r.set_parse_special(true);
    r.set_add_special(true);
    cases.push_back({"control bytes", r, grpc::StatusCode::OK, ""});
  }
  {
    v1::TokenizeRequest r;
    r.set_text("<s></s><unk><s><0x41>");
    r.set_parse_special(true);
    cases.push_back({"special tokens' text", r, grpc::StatusCode::OK, ""});
  }
  {
    v1::TokenizeRequest r;
    r.set_text("");
    cases.push_back({"empty text", r, grpc::StatusCode::OK, ""});
  }
  {
    v1::TokenizeRequest r;
    r.mutable_chat()->set_format(std::string(100 * 1024, 'f'));
    r.mutable_chat()->add_messages()->set_role("user");
    cases.push_back({"a 100 KB unknown format", r, grpc::StatusCode::INVALID_ARGUMENT, "fff"});
  }
  {
    v1::TokenizeRequest r;
    r.mutable_chat();
    cases.push_back({"a chat with no messages", r, grpc::StatusCode::OK, ""});
  }
  {
    v1::TokenizeRequest r;
    v1::ChatMessage* m = r.mutable_chat()->add_messages();
    m->set_role(std::string(1000, '\n'));
    m->set_content("{{ raise_exception('x') }}{% for %}");
    m->set_name("");
    r.mutable_chat()->set_format("chatml");
    cases.push_back({"a chat whose content looks like a template", r, grpc::StatusCode::OK, ""});
  }
  for (const TokenizeCase& c : cases) {
    SCOPED_TRACE(c.name);
    grpc::ClientContext context;
    v1::TokenizeResponse response;
    const grpc::Status status = worker_.stub->Tokenize(&context, c.request, &response);
    EXPECT_EQ(status.error_code(), c.code) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
    EXPECT_LE(status.error_message().size(), 1024u);
  }
}

// A model file's text is not checked for UTF-8 (a GGUF general.name of raw bytes), but
// Describe's answer is proto3 strings: before, the peer could not parse it (INTERNAL), so a
// coordinator could never start against the worker.
TEST(HostileModelFileTest, DescribeAnswersWithWellFormedTextForAModelNameOfRawBytes) {
  ASSERT_OK_AND_ASSIGN(std::string original,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  std::ifstream in(original, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // general.name is the 5-byte string "llama": same length, not UTF-8.
  const std::string key =
      std::string("general.name") + std::string("\x08\0\0\0\x05\0\0\0\0\0\0\0", 12);
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.substr(at + key.size(), 5), "llama");
  bytes.replace(at + key.size(), 5, "\xFFlam\xC3");
  const std::string path = ::testing::TempDir() + "/raw-name-stories260K.gguf";
  std::ofstream(path, std::ios::binary) << bytes;

  testing::TestServerOptions options;
  options.model_path = path;
  options.context_size = kContext;
  testing::TestWorkerServer worker;
  ASSERT_OK(testing::StartTestWorkerServer(options, &worker));
  grpc::ClientContext context;
  v1::DescribeResponse response;
  const grpc::Status status = worker.stub->Describe(&context, v1::DescribeRequest(), &response);
  ASSERT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  EXPECT_EQ(response.model().name(), "\xEF\xBF\xBDlam\xEF\xBF\xBD");
  EXPECT_EQ(response.model().vocab_size(), kVocab);
  worker.server->Shutdown();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tandem
