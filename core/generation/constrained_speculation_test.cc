// Constrained speculation is exact (output_constraint.h): on stories260K and its drafts, with
// test constraints whose allowed set is a function of the output so far (constraint_test_util.h)
// that mask p and q far from the models' own distributions.
//  - Greedy: the output equals the constrained target alone's token for token, for model drafts
//    and the n-gram drafter, k in {1, 4, 8}, pipelined or not, forced tokens on or off.
//  - Gumbel coupling: seeded output equals the constrained target alone's with any draft and k.
//  - Standard rule: the first tokens are distributed as the constrained target's own
//    (chi-square at 0.001), forced tokens included; pipelined output is the sequential output.
//  - A dead end ends the call with kInvalidArgument naming the position; every emitted token is
//    allowed; the halves cut and reject what the constraint refuses.
//  - A real grammar (GBNF over stories260K's tokenizer, core/grammar): greedy and Gumbel output
//    equal the target alone's, and every output is a sentence of the grammar.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "core/decoder/decoder.h"
#include "core/generation/chi_square.h"
#include "core/generation/constraint_test_util.h"
#include "core/generation/generation_test_util.h"
#include "core/generation/in_process_backends.h"
#include "core/generation/ngram_draft_backend.h"
#include "core/generation/round_driver.h"
#include "core/generation/session.h"
#include "core/generation/speculative_round.h"
#include "core/generation/speculative_session.h"
#include "core/grammar/compiled_constraint.h"
#include "core/grammar/constraint_spec.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::ChiSquareResult;
using ::tandem::testing::ChiSquareTest;
using ::tandem::testing::kEos;
using ::tandem::testing::kTargetPath;
using ::tandem::testing::Outcome;
using ::tandem::testing::RuleConstraint;
using ::tandem::testing::SharedModel;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kDistilled[] = "models/stories260K/derived/stories-draft-distilled.gguf";
constexpr char kFirst4Layers[] = "models/stories260K/derived/stories260K-first4layers.gguf";
constexpr char kNgram[] = "n-gram";
constexpr int32_t kModulus = 3;
constexpr int64_t kContextSize = 256;

enum class Rule { kModulo, kForcing };

const char* RuleName(Rule rule) { return rule == Rule::kModulo ? "modulo" : "forcing"; }

SamplerConfig Greedy() {
  SamplerConfig c;
  c.temperature = 0.0f;
  return c;
}

SamplerConfig Sampled(uint64_t seed, Coupling coupling) {
  SamplerConfig c;
  c.temperature = 1.0f;
  c.top_p = 0.95f;
  c.seed = seed;
  c.coupling = coupling;
  return c;
}

// How one constrained call speculates.
struct Speculation {
  const char* drafter = kDistilled;  // a draft model's path, or kNgram
  int32_t k = 4;
  bool pipelined = false;
  bool forced = false;  // forced tokens as free guesses

  std::string Name() const {
    return absl::StrCat(drafter, " k=", k, pipelined ? " pipelined" : "", forced ? " forced" : "");
  }
};

struct Generated {
  absl::Status status;
  std::vector<int32_t> tokens;  // as reported
  GenerationResult result;
};

class ConstrainedSpeculationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(target_, SharedModel(kTargetPath));
    vocab_ = target_->config().vocab_size;
  }

  std::unique_ptr<RuleConstraint> NewConstraint(Rule rule) const {
    return rule == Rule::kModulo ? testing::ModuloConstraint(vocab_, kModulus, {kEos})
                                 : testing::ForcingConstraint(vocab_, kModulus, {kEos});
  }

  // The constrained target alone (Session): the reference.
  Generated Alone(const SamplerConfig& config, const std::vector<int32_t>& context,
                  int64_t max_tokens, TokenConstraint* constraint) {
    SessionOptions options;
    options.sampler = config;
    options.context_size = kContextSize;
    options.stop_ids = {kEos};
    Generated run;
    absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*target_, pool_, options);
    if (!session.ok()) return {session.status(), {}, {}};
    absl::StatusOr<GenerationResult> r = (*session)->Generate(
        context, max_tokens,
        [&](int32_t t) {
          run.tokens.push_back(t);
          return true;
        },
        constraint);
    run.status = r.status();
    if (r.ok()) run.result = *r;
    return run;
  }

  // Speculation constrained by `make()`'s constraints (one per side, as the workers hold them).
  template <typename MakeConstraint>
  Generated Speculate(const Speculation& how, const SamplerConfig& config,
                      const std::vector<int32_t>& context, int64_t max_tokens,
                      MakeConstraint make) {
    std::unique_ptr<TokenConstraint> target_side = make();
    std::unique_ptr<TokenConstraint> draft_side = make();
    std::unique_ptr<TokenConstraint> driver_side = make();
    if (std::string(how.drafter) == kNgram) {
      return Ngram(how, config, context, max_tokens, target_side.get(), driver_side.get());
    }
    absl::StatusOr<const Model*> draft = SharedModel(how.drafter);
    if (!draft.ok()) return {draft.status(), {}, {}};
    SpeculativeOptions options;
    options.session.sampler = config;
    options.session.context_size = kContextSize;
    options.session.stop_ids = {kEos};
    options.draft_tokens = how.k;
    options.pipelined = how.pipelined;
    absl::StatusOr<std::unique_ptr<SpeculativeSession>> session =
        SpeculativeSession::Create(*target_, **draft, pool_, options);
    if (!session.ok()) return {session.status(), {}, {}};
    SpeculativeConstraints constraints;
    constraints.target = target_side.get();
    constraints.draft = draft_side.get();
    constraints.forced_tokens = how.forced ? driver_side.get() : nullptr;
    Generated run;
    absl::StatusOr<GenerationResult> r = (*session)->Generate(
        context, max_tokens,
        [&](int32_t t) {
          run.tokens.push_back(t);
          return true;
        },
        constraints);
    run.status = r.status();
    if (r.ok()) run.result = *r;
    return run;
  }

  Generated Speculate(const Speculation& how, const SamplerConfig& config,
                      const std::vector<int32_t>& context, int64_t max_tokens, Rule rule) {
    return Speculate(how, config, context, max_tokens, [&] { return NewConstraint(rule); });
  }

  // The n-gram drafter through the round driver over the in-process target, as the
  // coordinator runs it (it shares the driver's constraint object).
  Generated Ngram(const Speculation& how, const SamplerConfig& config,
                  const std::vector<int32_t>& context, int64_t max_tokens,
                  TokenConstraint* target_side, TokenConstraint* driver_side) {
    Decoder decoder(*target_, pool_);
    ModelState state;
    absl::StatusOr<std::unique_ptr<KvCache>> cache = decoder.NewCache(kContextSize, KvType::kF16);
    if (!cache.ok()) return {cache.status(), {}, {}};
    state.cache = std::move(*cache);
    absl::StatusOr<Sampler> sampler = Sampler::Create(config, vocab_);
    if (!sampler.ok()) return {sampler.status(), {}, {}};
    const int64_t start = static_cast<int64_t>(context.size());
    VerifyScratch scratch;
    InProcessTarget target(decoder, state, *sampler, config.seed, &scratch, /*timed=*/false,
                           OutputConstraint{target_side, start});
    NgramDraft ngram(NgramOptions(), OutputConstraint{driver_side, start});
    FixedDraftLength policy(how.k);
    RoundDriverOptions options;
    options.pipelined = how.pipelined;
    options.forced_tokens = how.forced ? driver_side : nullptr;
    RoundDriver driver(target, &ngram, nullptr, policy, options);
    const std::vector<int32_t> stop_ids = {kEos};
    RoundLimits limits;
    limits.stop_ids = stop_ids;
    limits.max_tokens = max_tokens;
    limits.context_size = kContextSize;
    std::vector<int32_t> sequence = context;
    Generated run;
    absl::StatusOr<GenerationResult> r =
        driver.Generate(sequence, limits, [&](std::vector<int32_t>& tokens) {
          run.tokens.insert(run.tokens.end(), tokens.begin(), tokens.end());
          return true;
        });
    run.status = r.status();
    if (r.ok()) run.result = *r;
    return run;
  }

  const Model* target_ = nullptr;
  int64_t vocab_ = 0;
  ThreadPool pool_{1};
};

std::vector<Speculation> AllSpeculations() {
  std::vector<Speculation> out;
  for (const char* drafter : {kDistilled, kFirst4Layers, kNgram}) {
    for (int32_t k : {1, 4, 8}) {
      for (bool pipelined : {false, true}) {
        for (bool forced : {false, true}) out.push_back({drafter, k, pipelined, forced});
      }
    }
  }
  return out;
}

// --- Greedy: exactly the constrained target alone ---------------------------------------------

TEST_F(ConstrainedSpeculationTest, GreedyOutputIsTheConstrainedTargetAlonesTokenForToken) {
  ASSERT_OK_AND_ASSIGN(std::vector<testing::GoldenCase> cases, testing::StoriesGoldenCases());
  ASSERT_GE(cases.size(), 3u);
  constexpr int64_t kTokens = 48;
  int64_t predrafted_with_forced = 0;  // pipelined rounds drafted ahead past forced tokens
  for (Rule rule : {Rule::kModulo, Rule::kForcing}) {
    for (size_t c = 0; c < 3; ++c) {
      const std::vector<int32_t>& prompt = cases[c].prompt_ids;
      std::unique_ptr<RuleConstraint> alone_constraint = NewConstraint(rule);
      const Generated expected = Alone(Greedy(), prompt, kTokens, alone_constraint.get());
      ASSERT_OK(expected.status);
      ASSERT_FALSE(expected.tokens.empty());
      // The constraint matters: the unconstrained output differs.
      EXPECT_NE(expected.tokens,
                std::vector<int32_t>(cases[c].greedy_ids.begin(),
                                     cases[c].greedy_ids.begin() + expected.tokens.size()));
      EXPECT_TRUE(NewConstraint(rule)->AllowsOutput(expected.tokens));
      for (const Speculation& how : AllSpeculations()) {
        SCOPED_TRACE(absl::StrCat(RuleName(rule), " case ", c, " ", how.Name()));
        const Generated run = Speculate(how, Greedy(), prompt, kTokens, rule);
        ASSERT_OK(run.status);
        EXPECT_EQ(run.tokens, expected.tokens);
        EXPECT_EQ(run.result.stop_reason, expected.result.stop_reason);
        const SpeculationStats& s = run.result.speculation;
        EXPECT_EQ(s.forced_accepted, s.forced);  // the target's constraint forces them too
        if (!how.forced) {
          EXPECT_EQ(s.forced, 0);
        } else if (rule == Rule::kForcing && how.k > 1) {
          EXPECT_GT(s.forced, 0);
          predrafted_with_forced += s.predrafted_rounds;
        }
      }
    }
  }
  EXPECT_GT(predrafted_with_forced, 0);
}

// --- Gumbel coupling: the constrained target alone's output for a seed -----------------------

TEST_F(ConstrainedSpeculationTest, SeededGumbelOutputIsTheConstrainedTargetAlonesForAnyDraftAndK) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  constexpr int64_t kTokens = 40;
  for (Rule rule : {Rule::kModulo, Rule::kForcing}) {
    for (uint64_t seed : {1, 2, 3}) {
      const SamplerConfig config = Sampled(seed, Coupling::kGumbel);
      std::unique_ptr<RuleConstraint> alone_constraint = NewConstraint(rule);
      const Generated expected = Alone(config, prompt, kTokens, alone_constraint.get());
      ASSERT_OK(expected.status);
      EXPECT_TRUE(NewConstraint(rule)->AllowsOutput(expected.tokens));
      for (const Speculation& how : AllSpeculations()) {
        SCOPED_TRACE(absl::StrCat(RuleName(rule), " seed ", seed, " ", how.Name()));
        const Generated run = Speculate(how, config, prompt, kTokens, rule);
        ASSERT_OK(run.status);
        EXPECT_EQ(run.tokens, expected.tokens);
      }
    }
  }
}

// --- The standard rule: the constrained target's distribution --------------------------------

// The pipelined rounds and their forced tokens are the sequential rounds: the same tokens for a
// seed under the standard rule too.
TEST_F(ConstrainedSpeculationTest, PipelinedConstrainedOutputIsTheSequentialOutput) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  for (const char* drafter : {kDistilled, kNgram}) {
    for (int32_t k : {1, 4, 8}) {
      for (bool forced : {false, true}) {
        const Speculation sequential{drafter, k, false, forced};
        const Speculation pipelined{drafter, k, true, forced};
        SCOPED_TRACE(pipelined.Name());
        int64_t predrafted = 0;
        for (uint64_t seed : {5, 6}) {
          const SamplerConfig config = Sampled(seed, Coupling::kStandard);
          const Generated a = Speculate(sequential, config, prompt, 48, Rule::kForcing);
          const Generated b = Speculate(pipelined, config, prompt, 48, Rule::kForcing);
          ASSERT_OK(a.status);
          ASSERT_OK(b.status);
          EXPECT_EQ(b.tokens, a.tokens) << "seed " << seed;
          EXPECT_TRUE(NewConstraint(Rule::kForcing)->AllowsOutput(b.tokens));
          predrafted += b.result.speculation.predrafted_rounds;
        }
        if (std::string(drafter) == kDistilled && k == 1) {  // longer rounds are seldom all kept
          EXPECT_GT(predrafted, 0);
        }
      }
    }
  }
}

// The exact distribution of the constrained target's first `depth` tokens after `prompt`, for
// every outcome that `draws` draws expect at least 5 times (the rest is pooled by the test).
class ConstrainedTargetDistribution {
 public:
  ConstrainedTargetDistribution(const Model& model, ThreadPool& pool, const SamplerConfig& config,
                                std::unique_ptr<RuleConstraint> constraint)
      : decoder_(model, pool),
        sampler_(*Sampler::Create(config, model.config().vocab_size)),
        constraint_(std::move(constraint)) {}

  std::map<Outcome, double> Enumerate(const std::vector<int32_t>& prompt, int depth,
                                      int64_t draws) {
    std::map<Outcome, double> out;
    std::vector<int32_t> tokens = prompt;
    Expand(tokens, prompt.size(), depth, 1.0, draws, out);
    return out;
  }

 private:
  void Expand(std::vector<int32_t>& tokens, size_t prompt_size, int depth, double probability,
              int64_t draws, std::map<Outcome, double>& out) {
    const Outcome output(tokens.begin() + prompt_size, tokens.end());
    if (depth == 0) {
      out[output] = probability;
      return;
    }
    auto cache = decoder_.NewCache(64, KvType::kF16);
    ASSERT_TRUE(cache.ok());
    auto logits = decoder_.Forward(**cache, tokens, 0, LogitsMode::kLast);
    ASSERT_TRUE(logits.ok()) << logits.status();
    ASSERT_OK(constraint_->Sync(output));
    TokenMask mask;
    constraint_->FillMask(&mask);
    std::vector<float> p(logits->size());
    sampler_.Distribution(*logits, tokens, absl::MakeSpan(p), &mask);
    for (size_t id = 0; id < p.size(); ++id) {
      if (probability * p[id] * draws < 5) continue;
      tokens.push_back(static_cast<int32_t>(id));
      Expand(tokens, prompt_size, depth - 1, probability * p[id], draws, out);
      tokens.pop_back();
    }
  }

  Decoder decoder_;
  Sampler sampler_;
  std::unique_ptr<RuleConstraint> constraint_;
};

// "The little dog was sad because": the continuation is genuinely uncertain.
const std::vector<int32_t> kOpenPrompt = {1,   291, 376, 400, 428, 286, 296,
                                          418, 329, 429, 412, 425, 372};
constexpr int64_t kSeeds = 3000;

struct LosslessCase {
  const char* draft;
  Rule rule;
  int depth;  // the forcing rule forces the output's tokens 1 and 2: one more to look at
  bool forced;
};

TEST_F(ConstrainedSpeculationTest, FirstTokensAreDistributedAsTheConstrainedTargetsOwn) {
  SamplerConfig config;  // T = 1, no filter: every allowed token has mass
  const std::vector<LosslessCase> cases = {
      {kFirst4Layers, Rule::kModulo, 3, false},
      {kDistilled, Rule::kModulo, 3, false},
      {kDistilled, Rule::kForcing, 4, true},
  };
  for (const LosslessCase& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.draft, " ", RuleName(c.rule), c.forced ? " forced" : ""));
    ConstrainedTargetDistribution target(*target_, pool_, config, NewConstraint(c.rule));
    const std::map<Outcome, double> expected = target.Enumerate(kOpenPrompt, c.depth, kSeeds);
    ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(c.draft));
    SpeculativeOptions options;
    options.session.sampler = config;
    options.session.context_size = 32;
    options.draft_tokens = 2;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<SpeculativeSession> session,
                         SpeculativeSession::Create(*target_, *draft, pool_, options));
    // One object per side, kept across calls: each call starts a new output, synced by content.
    std::unique_ptr<RuleConstraint> target_side = NewConstraint(c.rule);
    std::unique_ptr<RuleConstraint> draft_side = NewConstraint(c.rule);
    std::unique_ptr<RuleConstraint> driver_side = NewConstraint(c.rule);
    SpeculativeConstraints constraints{target_side.get(), draft_side.get(),
                                       c.forced ? driver_side.get() : nullptr};
    std::map<Outcome, int64_t> observed;
    SpeculationStats stats;
    for (int64_t seed = 0; seed < kSeeds; ++seed) {
      session->set_seed(seed);
      Outcome tokens;
      ASSERT_OK_AND_ASSIGN(GenerationResult r, session->Generate(
                                                   kOpenPrompt, c.depth,
                                                   [&](int32_t t) {
                                                     tokens.push_back(t);
                                                     return true;
                                                   },
                                                   constraints));
      ++observed[tokens];
      stats.drafted += r.speculation.drafted;
      stats.accepted += r.speculation.accepted;
      stats.forced += r.speculation.forced;
    }
    const ChiSquareResult result = ChiSquareTest(observed, expected, kSeeds);
    EXPECT_FALSE(result.rejected()) << result.ToString();
    if (c.forced) {
      EXPECT_GT(stats.forced, 0);
    }
    std::printf("%s %s%s: %s; acceptance %.3f, %lld forced\n", c.draft, RuleName(c.rule),
                c.forced ? " forced" : "", result.ToString().c_str(), stats.acceptance_rate(),
                static_cast<long long>(stats.forced));
  }
}

// The test has power: the unconstrained target's draws fail it.
TEST_F(ConstrainedSpeculationTest, ChiSquareDetectsTheUnconstrainedDistribution) {
  SamplerConfig config;
  ConstrainedTargetDistribution target(*target_, pool_, config, NewConstraint(Rule::kModulo));
  const std::map<Outcome, double> expected = target.Enumerate(kOpenPrompt, 1, kSeeds);
  std::map<Outcome, int64_t> observed;
  for (int64_t seed = 0; seed < kSeeds; ++seed) {
    config.seed = seed;
    const Generated run = Alone(config, kOpenPrompt, 1, nullptr);
    ASSERT_OK(run.status);
    ++observed[run.tokens];
  }
  EXPECT_TRUE(ChiSquareTest(observed, expected, kSeeds).rejected());
}

// --- Dead ends --------------------------------------------------------------------------------

TEST_F(ConstrainedSpeculationTest, ADeadEndEndsTheCallWithInvalidArgumentNamingThePosition) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  for (int64_t dead_at : {0, 5, 13}) {
    const std::string message =
        absl::StrCat("the constraint allows no token after ", dead_at, " generated tokens");
    auto dead_end = [&] { return testing::DeadEndConstraint(vocab_, kModulus, dead_at); };
    std::unique_ptr<RuleConstraint> alone_constraint = dead_end();
    const Generated alone = Alone(Greedy(), prompt, 40, alone_constraint.get());
    EXPECT_THAT(alone.status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
    EXPECT_EQ(alone.tokens.size(), static_cast<size_t>(dead_at));  // reported before it
    for (const Speculation& how : AllSpeculations()) {
      SCOPED_TRACE(absl::StrCat("dead at ", dead_at, " ", how.Name()));
      const Generated run = Speculate(how, Greedy(), prompt, 40, dead_end);
      EXPECT_THAT(run.status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
      // What was reported before the error is the target alone's.
      ASSERT_LE(run.tokens.size(), alone.tokens.size());
      EXPECT_EQ(run.tokens, std::vector<int32_t>(alone.tokens.begin(),
                                                 alone.tokens.begin() + run.tokens.size()));
    }
  }
}

// --- A real grammar: GBNF over stories260K's tokenizer ---------------------------------------

constexpr char kStoryGrammar[] =
    R"(root ::= " "? "Once upon a time, " name " went to the " place ". " name " was " mood "."
name ::= "Tom" | "Lily" | "Ben" | "Sue"
place ::= "park" | "shop" | "beach"
mood ::= "happy" | "sad" | "very tired")";

// Whether `text` is a sentence of kStoryGrammar.
bool IsStorySentence(std::string text) {
  if (!text.empty() && text[0] == ' ') text.erase(0, 1);
  const std::vector<std::string> names = {"Tom", "Lily", "Ben", "Sue"};
  for (const std::string& name : names) {
    for (const char* place : {"park", "shop", "beach"}) {
      for (const std::string& other : names) {
        for (const char* mood : {"happy", "sad", "very tired"}) {
          if (text == absl::StrCat("Once upon a time, ", name, " went to the ", place, ". ", other,
                                   " was ", mood, ".")) {
            return true;
          }
        }
      }
    }
  }
  return false;
}

class GrammarSpeculationTest : public ConstrainedSpeculationTest {
 protected:
  void SetUp() override {
    ConstrainedSpeculationTest::SetUp();
    ASSERT_OK_AND_ASSIGN(std::string path, testing::SharedFile(kTargetPath));
    ASSERT_OK_AND_ASSIGN(Tokenizer tokenizer, LoadTokenizer(path));
    tokenizer_.emplace(std::move(tokenizer));
    auto vocabulary = std::make_shared<const ConstraintVocabulary>(
        ConstraintVocabulary::FromTokenizer(*tokenizer_, {kEos}));
    ASSERT_OK_AND_ASSIGN(
        compiled_, CompileConstraint({ConstraintSpec::Kind::kGrammar, kStoryGrammar}, vocabulary));
  }

  std::unique_ptr<TokenConstraint> NewGrammarConstraint() const {
    return NewTokenConstraint(compiled_);
  }

  std::string Text(const std::vector<int32_t>& tokens) const {
    absl::StatusOr<std::string> text = tokenizer_->Decode(tokens);
    return text.ok() ? *text : absl::StrCat("<", text.status().ToString(), ">");
  }

  std::optional<Tokenizer> tokenizer_;
  std::shared_ptr<const CompiledConstraint> compiled_;
};

TEST_F(GrammarSpeculationTest, GrammarOutputIsTheTargetAlonesAndASentenceOfTheGrammar) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  constexpr int64_t kTokens = 64;
  std::vector<SamplerConfig> configs = {Greedy()};
  for (uint64_t seed : {1, 2, 3}) configs.push_back(Sampled(seed, Coupling::kGumbel));
  int64_t forced = 0;
  for (const SamplerConfig& config : configs) {
    std::unique_ptr<TokenConstraint> alone_constraint = NewGrammarConstraint();
    const Generated expected = Alone(config, prompt, kTokens, alone_constraint.get());
    ASSERT_OK(expected.status);
    EXPECT_EQ(expected.result.stop_reason, StopReason::kStopId);
    EXPECT_TRUE(IsStorySentence(Text(expected.tokens))) << Text(expected.tokens);
    std::printf("T=%g seed %llu: \"%s\"\n", config.temperature,
                static_cast<unsigned long long>(config.seed), Text(expected.tokens).c_str());
    for (const Speculation& how : AllSpeculations()) {
      SCOPED_TRACE(absl::StrCat("T=", config.temperature, " seed ", config.seed, " ", how.Name()));
      const Generated run =
          Speculate(how, config, prompt, kTokens, [&] { return NewGrammarConstraint(); });
      ASSERT_OK(run.status);
      EXPECT_EQ(run.tokens, expected.tokens);
      EXPECT_EQ(run.result.stop_reason, StopReason::kStopId);
      EXPECT_EQ(run.result.speculation.forced_accepted, run.result.speculation.forced);
      if (how.forced) forced += run.result.speculation.forced;
    }
  }
  EXPECT_GT(forced, 0);
}

// Under the standard rule the tokens differ with the draft, but every output is a sentence.
TEST_F(GrammarSpeculationTest, EverySampledOutputWithADraftIsASentenceOfTheGrammar) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Speculation how{kFirst4Layers, 4, seed % 2 == 1, true};
    const Generated run = Speculate(how, Sampled(seed, Coupling::kStandard), prompt, 64,
                                    [&] { return NewGrammarConstraint(); });
    ASSERT_OK(run.status);
    EXPECT_EQ(run.result.stop_reason, StopReason::kStopId) << "seed " << seed;
    EXPECT_TRUE(IsStorySentence(Text(run.tokens))) << "seed " << seed << ": " << Text(run.tokens);
  }
}

// --- The halves -------------------------------------------------------------------------------

class ConstrainedHalvesTest : public ConstrainedSpeculationTest {
 protected:
  void SetUp() override {
    ConstrainedSpeculationTest::SetUp();
    decoder_ = std::make_unique<Decoder>(*target_, pool_);
    ASSERT_OK_AND_ASSIGN(state_.cache, decoder_->NewCache(64, KvType::kF16));
    ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(Greedy(), vocab_));
    sampler_.emplace(std::move(sampler));
  }

  // The target's verdict on `guesses` after kPrompt, greedy.
  absl::StatusOr<AcceptanceResult> Verify(std::vector<int32_t>* guesses,
                                          TokenConstraint* constraint) {
    std::vector<SparseDistribution> q(guesses->size());
    for (size_t i = 0; i < guesses->size(); ++i) q[i] = {{(*guesses)[i]}, {1.0f}};
    return VerifyGuesses(*decoder_, state_, *sampler_, kPrompt, guesses, q, 0, &scratch_,
                         OutputConstraint{constraint, static_cast<int64_t>(kPrompt.size())});
  }

  const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378};
  std::unique_ptr<Decoder> decoder_;
  ModelState state_;
  std::optional<Sampler> sampler_;
  VerifyScratch scratch_;
};

TEST_F(ConstrainedHalvesTest, ARefusedGuessIsRejectedForCertainAndTheGuessesAfterItAreNotRun) {
  std::unique_ptr<RuleConstraint> constraint = NewConstraint(Rule::kModulo);
  std::vector<int32_t> none;
  ASSERT_OK_AND_ASSIGN(AcceptanceResult first, Verify(&none, constraint.get()));
  const int32_t t0 = first.next_token;
  ASSERT_TRUE(constraint->AllowsOutput({t0}));
  // A token the constraint refuses after t0 (every id of another residue is refused).
  int32_t refused = testing::kFirstTextToken;
  while (constraint->AllowsOutput({t0, refused})) ++refused;
  std::vector<int32_t> guesses = {t0, refused, t0, t0};
  ASSERT_OK_AND_ASSIGN(AcceptanceResult r, Verify(&guesses, constraint.get()));
  EXPECT_EQ(r.accepted, 1);
  EXPECT_EQ(guesses, (std::vector<int32_t>{t0, refused}));  // cut to the guesses tested
  EXPECT_EQ(r.guess_probabilities[1], 0.0f);
  EXPECT_TRUE(constraint->AllowsOutput({t0, r.next_token}));
  // The pass ran the pending token and t0 only.
  EXPECT_EQ(state_.cached.size(), kPrompt.size() + 1);
}

TEST_F(ConstrainedHalvesTest, AGuessIntoADeadEndFailsTheRoundOnlyIfKept) {
  std::unique_ptr<RuleConstraint> constraint = testing::DeadEndConstraint(vocab_, kModulus, 1);
  std::vector<int32_t> none;
  // Nothing after one token: a round without guesses still draws the first.
  ASSERT_OK_AND_ASSIGN(AcceptanceResult first, Verify(&none, constraint.get()));
  const int32_t t0 = first.next_token;
  int32_t other = testing::kFirstTextToken;  // another allowed first token
  while (other == t0 || !constraint->AllowsOutput({other})) ++other;
  std::vector<int32_t> rejected = {other, t0};
  ASSERT_OK_AND_ASSIGN(AcceptanceResult r, Verify(&rejected, constraint.get()));
  EXPECT_EQ(r.accepted, 0);
  EXPECT_EQ(r.next_token, t0);
  EXPECT_EQ(rejected, std::vector<int32_t>{other});  // the guesses end at the dead end
  std::vector<int32_t> kept = {t0, other};
  EXPECT_THAT(Verify(&kept, constraint.get()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the constraint allows no token after 1 generated tokens")));
}

TEST_F(ConstrainedHalvesTest, DraftGuessesAreAllowedAndEndAtADeadEnd) {
  ASSERT_OK_AND_ASSIGN(const Model* draft_model, SharedModel(kDistilled));
  Decoder draft(*draft_model, pool_);
  ModelState state;
  ASSERT_OK_AND_ASSIGN(state.cache, draft.NewCache(64, KvType::kF16));
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(Sampled(3, Coupling::kStandard),
                                                        draft_model->config().vocab_size));
  const int64_t start = static_cast<int64_t>(kPrompt.size());
  std::vector<int32_t> guesses;
  std::vector<SparseDistribution> q;
  std::unique_ptr<RuleConstraint> modulo = NewConstraint(Rule::kModulo);
  ASSERT_OK(DraftGuesses(draft, state, sampler, kPrompt, 6, 3, &guesses, &q,
                         OutputConstraint{modulo.get(), start}));
  ASSERT_EQ(guesses.size(), 6u);
  std::unique_ptr<RuleConstraint> check = NewConstraint(Rule::kModulo);
  EXPECT_TRUE(check->AllowsOutput(guesses));
  for (size_t i = 0; i < guesses.size(); ++i) {  // q is masked: its support is allowed
    ASSERT_OK(check->Sync(absl::MakeConstSpan(guesses).first(i)));
    TokenMask mask;
    check->FillMask(&mask);
    for (int32_t id : q[i].ids) EXPECT_TRUE(mask.Allowed(id)) << "guess " << i << " id " << id;
  }
  std::unique_ptr<RuleConstraint> dead_end = testing::DeadEndConstraint(vocab_, kModulus, 2);
  ASSERT_OK(DraftGuesses(draft, state, sampler, kPrompt, 6, 3, &guesses, &q,
                         OutputConstraint{dead_end.get(), start}));
  EXPECT_EQ(guesses.size(), 2u);
}

TEST(NgramDraftTest, GuessesAreCutAtTheFirstTokenTheConstraintRefuses) {
  // The history repeats 5 6 7 8 9 10 11 12: a long match, up to 8 guesses.
  std::vector<int32_t> sequence = {1};
  for (int repeat = 0; repeat < 3; ++repeat) {
    for (int32_t t = 5; t <= 12; ++t) sequence.push_back(t);
  }
  sequence.pop_back();  // the guesses start with 12
  Proposal plain;
  NgramDraft unconstrained;
  ASSERT_OK(unconstrained.Draft(sequence, 4, &plain).get());
  ASSERT_EQ(plain.tokens, (std::vector<int32_t>{12, 5, 6, 7}));
  testing::RuleConstraint no_six(100, [](absl::Span<const int32_t>, int32_t t) { return t != 6; });
  NgramDraft constrained(NgramOptions(),
                         OutputConstraint{&no_six, static_cast<int64_t>(sequence.size())});
  Proposal cut;
  ASSERT_OK(constrained.Draft(sequence, 4, &cut).get());
  EXPECT_EQ(cut.tokens, (std::vector<int32_t>{12, 5}));
  ASSERT_GE(cut.q.size(), 2u);
  EXPECT_EQ(cut.q[1].ids, std::vector<int32_t>{5});
}

}  // namespace
}  // namespace tandem
