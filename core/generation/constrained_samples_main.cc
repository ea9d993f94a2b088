// constrained_samples: the outputs of JSON Schema constrained generation over random schemas,
// for tools/validate_json_schema.mjs (ajv) to judge (tests/ops/constrained_validity_test.py,
// issue 27's validity test). For each random schema (random_schema_test_util.h, bounded: every
// output of any model ends), each seed and each drafter (none: Session; a model draft:
// SpeculativeSession; the n-gram drafter: RoundDriver over the in-process target), it
// generates with the target constrained to the schema and prints one JSON line
//
//   {"schema": S, "text": T, "model": M, "drafter": D, "seed": N, "sampling": "T=1"|"greedy",
//    "finished": B, "tokens": N[, "error": E]}
//
// T is the output's bytes (the tokens' text); finished: it ended with an end-of-output token
// (an output cut by --max_tokens is incomplete JSON: a failure). Sampling is at temperature 1
// (top-p 1) for seeds 1..--seeds, and greedy too for every --greedy_every-th schema. The
// speculation settings vary with the seed: k in {1, 4, 8}, pipelined or not, forced tokens on
// for odd schemas. The prompt is --prompt and a valid instance of the schema (--example), which
// gives the n-gram drafter guesses to make. A summary per drafter goes to stderr.
//
//   constrained_samples --model=NAME --target=T.gguf [--draft=D.gguf] [--schemas=200]
//       [--seeds=3] [--first_schema=1] [--greedy_every=4] [--max_tokens=768] [--context=1024]
//       [--drafters=none,model,ngram] [--prompt=TEXT] [--bounded=1] [--example=1]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/base/utf8_repair.h"
#include "core/decoder/decoder.h"
#include "core/decoder/model.h"
#include "core/generation/draft_length_policy.h"
#include "core/generation/in_process_backends.h"
#include "core/generation/ngram_draft_backend.h"
#include "core/generation/round_driver.h"
#include "core/generation/session.h"
#include "core/generation/speculative_session.h"
#include "core/grammar/compiled_constraint.h"
#include "core/grammar/constraint_spec.h"
#include "core/grammar/random_schema_test_util.h"
#include "core/kernels/thread_pool.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_loader.h"

namespace tandem {
namespace {

struct Flags {
  std::string model, target, draft, prompt = "Once upon a time";
  std::vector<std::string> drafters = {"none", "model", "ngram"};
  int schemas = 200, seeds = 3, first_schema = 1, greedy_every = 4;
  int bounded = 1;  // 0: RandomSchema's default schemas, whose outputs need not end
  // 1: the prompt ends with a valid instance of the schema (RandomInstance) twice, so that the
  // n-gram drafter finds guesses in it (some the constraint cuts, some the target rejects).
  int example = 1;
  int64_t max_tokens = 768, context = 1024;
};

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    if (!absl::StartsWith(arg, "--") || eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("expected --flag=value, got '", arg, "'"));
    }
    const std::string key = arg.substr(2, eq - 2), value = arg.substr(eq + 1);
    std::map<std::string, int*> ints = {{"schemas", &f.schemas},
                                        {"seeds", &f.seeds},
                                        {"first_schema", &f.first_schema},
                                        {"greedy_every", &f.greedy_every},
                                        {"bounded", &f.bounded},
                                        {"example", &f.example}};
    std::map<std::string, int64_t*> longs = {{"max_tokens", &f.max_tokens},
                                             {"context", &f.context}};
    std::map<std::string, std::string*> strings = {
        {"model", &f.model}, {"target", &f.target}, {"draft", &f.draft}, {"prompt", &f.prompt}};
    bool ok = true;
    if (ints.count(key)) {
      ok = absl::SimpleAtoi(value, ints[key]);
    } else if (longs.count(key)) {
      ok = absl::SimpleAtoi(value, longs[key]);
    } else if (strings.count(key)) {
      *strings[key] = value;
    } else if (key == "drafters") {
      f.drafters = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", key));
    }
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("--", key, ": not a number"));
  }
  if (f.model.empty() || f.target.empty()) {
    return absl::InvalidArgumentError("--model and --target are required");
  }
  return f;
}

// One generation's settings.
struct Run {
  std::string drafter;  // "none", "model" or "ngram"
  SamplerConfig sampler;
  int32_t k = 4;
  bool pipelined = false;
  bool forced = false;

  std::string Name() const {
    if (drafter == "none") return drafter;
    return absl::StrCat(drafter, " k=", k, pipelined ? " pipelined" : "", forced ? " forced" : "");
  }
};

struct Output {
  absl::Status status;
  std::vector<int32_t> tokens;
  bool finished = false;
  SpeculationStats speculation;
};

Output Failed(absl::Status status) {
  Output out;
  out.status = std::move(status);
  return out;
}

class Generator {
 public:
  Generator(const Flags& flags, const Model& target, const Model* draft,
            std::vector<int32_t> stop_ids)
      : flags_(flags), target_(target), draft_(draft), stop_ids_(std::move(stop_ids)) {}

  Output Generate(const Run& run, const std::vector<int32_t>& prompt,
                  const std::shared_ptr<const CompiledConstraint>& compiled) {
    std::unique_ptr<TokenConstraint> target_side = NewTokenConstraint(compiled);
    std::unique_ptr<TokenConstraint> draft_side = NewTokenConstraint(compiled);
    std::unique_ptr<TokenConstraint> driver_side = NewTokenConstraint(compiled);
    Output out;
    const auto collect = [&out](int32_t t) {
      out.tokens.push_back(t);
      return true;
    };
    absl::StatusOr<GenerationResult> r = absl::InternalError("no drafter ran");
    if (run.drafter == "none") {
      SessionOptions options = Options(run);
      absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(target_, pool_, options);
      if (!session.ok()) return Failed(session.status());
      r = (*session)->Generate(prompt, flags_.max_tokens, collect, target_side.get());
    } else if (run.drafter == "model") {
      if (draft_ == nullptr) return Failed(absl::InvalidArgumentError("no --draft"));
      SpeculativeOptions options;
      options.session = Options(run);
      options.draft_tokens = run.k;
      options.pipelined = run.pipelined;
      absl::StatusOr<std::unique_ptr<SpeculativeSession>> session =
          SpeculativeSession::Create(target_, *draft_, pool_, options);
      if (!session.ok()) return Failed(session.status());
      SpeculativeConstraints constraints;
      constraints.target = target_side.get();
      constraints.draft = draft_side.get();
      constraints.forced_tokens = run.forced ? driver_side.get() : nullptr;
      r = (*session)->Generate(prompt, flags_.max_tokens, collect, constraints);
    } else {
      r = Ngram(run, prompt, target_side.get(), driver_side.get(), &out.tokens);
    }
    out.status = r.status();
    out.finished = r.ok() && r->stop_reason == StopReason::kStopId;
    if (r.ok()) out.speculation = r->speculation;
    return out;
  }

 private:
  SessionOptions Options(const Run& run) const {
    SessionOptions options;
    options.sampler = run.sampler;
    options.context_size = flags_.context;
    options.stop_ids = stop_ids_;
    return options;
  }

  // The n-gram drafter through the round driver over the in-process target, as the
  // coordinator runs it (the drafter shares the driver's constraint object).
  absl::StatusOr<GenerationResult> Ngram(const Run& run, const std::vector<int32_t>& prompt,
                                         TokenConstraint* target_side,
                                         TokenConstraint* driver_side,
                                         std::vector<int32_t>* tokens) {
    Decoder decoder(target_, pool_);
    ModelState state;
    ASSIGN_OR_RETURN(state.cache, decoder.NewCache(flags_.context, KvType::kF16));
    ASSIGN_OR_RETURN(Sampler sampler,
                     Sampler::Create(run.sampler, target_.config().vocab_size));
    const int64_t start = static_cast<int64_t>(prompt.size());
    VerifyScratch scratch;
    InProcessTarget target(decoder, state, sampler, run.sampler.seed, &scratch, /*timed=*/false,
                           OutputConstraint{target_side, start});
    NgramDraft ngram(NgramOptions(), OutputConstraint{driver_side, start});
    FixedDraftLength policy(run.k);
    RoundDriverOptions options;
    options.pipelined = run.pipelined;
    options.forced_tokens = run.forced ? driver_side : nullptr;
    RoundDriver driver(target, &ngram, nullptr, policy, options);
    RoundLimits limits;
    limits.stop_ids = stop_ids_;
    limits.max_tokens = flags_.max_tokens;
    limits.context_size = flags_.context;
    std::vector<int32_t> sequence = prompt;
    return driver.Generate(sequence, limits, [tokens](std::vector<int32_t>& round) {
      tokens->insert(tokens->end(), round.begin(), round.end());
      return true;
    });
  }

  const Flags& flags_;
  const Model& target_;
  const Model* draft_;
  std::vector<int32_t> stop_ids_;
  ThreadPool pool_{1};
};

// The runs of schema `index` for `seed` (0: greedy) and `drafter`.
Run MakeRun(const std::string& drafter, int index, int seed) {
  Run run;
  run.drafter = drafter;
  run.sampler.temperature = seed == 0 ? 0.0f : 1.0f;
  run.sampler.seed = static_cast<uint64_t>(seed);
  static constexpr int32_t kDraftTokens[] = {1, 4, 8};
  run.k = kDraftTokens[(index + seed) % 3];
  run.pipelined = (index + seed) % 2 == 0;
  run.forced = index % 2 == 1;
  return run;
}

struct Tally {
  int outputs = 0, finished = 0, errors = 0;
  int64_t tokens = 0, drafted = 0, accepted = 0, forced = 0;
  double seconds = 0;

  void Add(const Output& out, double elapsed) {
    ++outputs;
    finished += out.finished ? 1 : 0;
    errors += out.status.ok() ? 0 : 1;
    tokens += static_cast<int64_t>(out.tokens.size());
    drafted += out.speculation.drafted;
    accepted += out.speculation.accepted;
    forced += out.speculation.forced;
    seconds += elapsed;
  }
};

std::string OutputLine(const json::Value& schema, const std::string& text, const Flags& flags,
                       const Run& run, int seed, const Output& out) {
  const std::string valid_text = utf8::ReplaceInvalid(text);
  json::Object line{{"schema", schema},
                    {"text", valid_text},
                    {"model", flags.model},
                    {"drafter", run.Name()},
                    {"seed", seed},
                    {"sampling", seed == 0 ? "greedy" : "T=1"},
                    {"finished", out.finished},
                    {"tokens", static_cast<int64_t>(out.tokens.size())}};
  if (!out.status.ok()) line.Set("error", out.status.ToString());
  if (valid_text != text) line.Set("error", "the output is not valid UTF-8");
  return testing::CompactJson(json::Value(std::move(line)));
}

absl::Status Main(const Flags& flags) {
  ASSIGN_OR_RETURN(Tokenizer tokenizer, LoadTokenizer(flags.target));
  ASSIGN_OR_RETURN(std::unique_ptr<Model> target, Model::Load(flags.target));
  std::unique_ptr<Model> draft;
  if (!flags.draft.empty()) {
    ASSIGN_OR_RETURN(draft, Model::Load(flags.draft));
  }
  const Vocabulary& v = tokenizer.vocabulary();
  std::vector<int32_t> stop_ids = v.end_of_turn_ids;
  if (v.eos_id) stop_ids.push_back(*v.eos_id);
  if (stop_ids.empty()) return absl::FailedPreconditionError("the vocabulary has no EOS");
  ASSIGN_OR_RETURN(const std::vector<int32_t> plain_prompt,
                   tokenizer.Encode(flags.prompt, {.add_special = true}));
  auto vocabulary = std::make_shared<const ConstraintVocabulary>(
      ConstraintVocabulary::FromTokenizer(tokenizer, stop_ids));
  Generator generator(flags, *target, draft.get(), stop_ids);
  testing::RandomSchemaOptions schema_options;
  schema_options.bounded = flags.bounded != 0;
  std::map<std::string, Tally> tallies;
  for (int index = flags.first_schema; index < flags.first_schema + flags.schemas; ++index) {
    const json::Value schema = testing::RandomSchema(static_cast<uint32_t>(index), schema_options);
    absl::StatusOr<std::shared_ptr<const CompiledConstraint>> compiled =
        CompileConstraint({ConstraintSpec::Kind::kJsonSchema, json::Serialize(schema)}, vocabulary);
    if (!compiled.ok()) {  // the bounded schemas are all supported: a compiler bug
      return absl::Status(compiled.status().code(),
                          absl::StrCat("schema ", index, ": ", compiled.status().message()));
    }
    std::vector<int32_t> prompt = plain_prompt;
    if (flags.example) {
      const std::string example =
          testing::CompactJson(testing::RandomInstance(schema, static_cast<uint32_t>(index)));
      // Twice, each after a newline as the output will be: the drafter's match.
      ASSIGN_OR_RETURN(prompt, tokenizer.Encode(
                                   absl::StrCat(flags.prompt, "\n", example, "\n", example, "\n"),
                                   {.add_special = true}));
      // Most of the context stays for the output.
      if (static_cast<int64_t>(prompt.size()) > flags.context / 4) prompt = plain_prompt;
    }
    const int first_seed = flags.greedy_every > 0 && index % flags.greedy_every == 0 ? 0 : 1;
    for (int seed = first_seed; seed <= flags.seeds; ++seed) {
      for (const std::string& drafter : flags.drafters) {
        const Run run = MakeRun(drafter, index, seed);
        const auto begin = std::chrono::steady_clock::now();
        const Output out = generator.Generate(run, prompt, *compiled);
        tallies[drafter].Add(
            out, std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
        ASSIGN_OR_RETURN(std::string text,
                         tokenizer.Decode(out.tokens, {.strip_leading_space = false}));
        std::printf("%s\n", OutputLine(schema, text, flags, run, seed, out).c_str());
      }
    }
    std::fflush(stdout);
  }
  for (const auto& [drafter, t] : tallies) {
    std::fprintf(stderr,
                 "constrained_samples: %s %s: %d outputs, %d finished, %d errors, %lld tokens "
                 "(%lld guesses drafted, %lld accepted, %lld forced), %.1f s\n",
                 flags.model.c_str(), drafter.c_str(), t.outputs, t.finished, t.errors,
                 static_cast<long long>(t.tokens), static_cast<long long>(t.drafted),
                 static_cast<long long>(t.accepted), static_cast<long long>(t.forced), t.seconds);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  absl::StatusOr<tandem::Flags> flags = tandem::ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::fprintf(stderr, "constrained_samples: %s\n", std::string(flags.status().message()).c_str());
    return 2;
  }
  absl::Status status = tandem::Main(*flags);
  if (!status.ok()) {
    std::fprintf(stderr, "constrained_samples: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
