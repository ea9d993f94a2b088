// tandem-constraint-bench [--shared DIR] [--reps 20]
// Times the constrained-output engine on real vocabularies: the 49,152-token starcoder2
// vocabulary and the 128,256-token Llama-3 one. For each benchmark constraint (a 20-property
// JSON Schema, json_object, a GBNF grammar, a regex) it prints
//  - compile: the median time to compile the constraint: the grammar and the token sets of
//    every grammar position (PositionTokenSets::ComputeAll), not yet any mask;
//  - first request: the mask times of the first request on a fresh compile (masks are
//    computed on first use and cached per matcher state), their total, p99 and maximum;
//  - new output p50/p99: per token, over outputs with other content than the first, each
//    walked once on the compile that served the first (a new request on a cached compile:
//    the masks of states it shares with earlier requests are cached, new states are not);
//  - steady p50/p99: all outputs again, --reps times (every state seen before);
//  - forced: the share of positions where exactly one token was allowed.
// A request's tokens are the Encode of a valid output text, so the walk follows real tokens.
// With --model, it instead times greedy decoding of that model with and without the JSON
// constraints (the issue's "decode with a schema" figure).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "core/base/command_line.h"
#include "core/base/status_macros.h"
#include "core/grammar/compiled_constraint.h"
#include "core/grammar/constraint_grammar.h"
#include "core/grammar/grammar_matcher.h"
#include "core/decoder/model.h"
#include "core/decoder/decoder.h"
#include "core/generation/draft_length_policy.h"
#include "core/generation/in_process_backends.h"
#include "core/generation/ngram_draft_backend.h"
#include "core/generation/round_driver.h"
#include "core/generation/session.h"
#include "core/kernels/thread_pool.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_loader.h"

ABSL_FLAG(std::string, shared, "", "the shared data folder (default: $TANDEM_SHARED or ../shared)");
ABSL_FLAG(int, reps, 20, "warm requests per constraint and vocabulary");
ABSL_FLAG(std::string, model, "",
          "also time greedy decoding of this GGUF with and without a constraint (e.g. the "
          "SmolLM2-360M-shape Q8_0 fixture, starcoder vocabulary)");
ABSL_FLAG(int, n, 64, "with --model: tokens per decode");
ABSL_FLAG(int, threads, 2, "with --model: threads for the forward pass");

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct BenchCase {
  const char* name;
  ConstraintSpec spec;
  std::vector<std::string> outputs;  // valid outputs, walked token by token
};

const char kPersonSchema[] = R"({
  "type": "object",
  "properties": {
    "id": {"type": "integer", "minimum": 1},
    "name": {"type": "string", "maxLength": 64},
    "email": {"type": "string", "format": "email"},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "active": {"type": "boolean"},
    "score": {"type": "number"},
    "role": {"enum": ["admin", "editor", "viewer"]},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    "created": {"type": "string", "format": "date"},
    "uuid": {"type": "string", "format": "uuid"},
    "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
    "city": {"type": "string"},
    "street": {"type": "string"},
    "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
    "phone": {"type": ["string", "null"]},
    "manager": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    "level": {"const": "senior"},
    "notes": {"type": "string", "minLength": 0, "maxLength": 200},
    "address": {"type": "object", "properties": {"line": {"type": "string"},
                "floor": {"type": "integer"}}, "required": ["line", "floor"],
                "additionalProperties": false},
    "history": {"type": "array", "items": {"type": "object", "properties": {
                "year": {"type": "integer"}, "title": {"type": "string"}},
                "required": ["year", "title"], "additionalProperties": false}}
  },
  "required": ["id", "name", "email", "age", "active", "score", "role", "tags", "created",
               "uuid", "country", "city", "street", "zip", "phone", "manager", "level",
               "notes", "address", "history"],
  "additionalProperties": false
})";

std::vector<BenchCase> Cases() {
  return {
      {"json_schema (20 properties)",
       {ConstraintSpec::Kind::kJsonSchema, kPersonSchema},
       {R"({"id":42,"name":"Ada Lovelace","email":"ada@example.com","age":36,"active":true,)"
        R"("score":97.5,"role":"admin","tags":["math","engines"],"created":"1843-07-01",)"
        R"("uuid":"123e4567-e89b-12d3-a456-426614174000","country":"GB","city":"London",)"
        R"("street":"St James's Square","zip":"12345","phone":null,"manager":null,)"
        R"("level":"senior","notes":"Wrote the first published program for the )"
        R"(Analytical Engine.","address":{"line":"12 St James's Square","floor":2},)"
        R"("history":[{"year":1833,"title":"Met Babbage"},{"year":1843,"title":"Notes"}]})",
        R"({"id":7,"name":"Grace Hopper","email":"grace.hopper@navy.mil","age":85,"active":false,)"
        R"("score":-3.25e2,"role":"editor","tags":[],"created":"1906-12-09",)"
        R"("uuid":"00000000-0000-4000-8000-00000000abcd","country":"US","city":"Arlington",)"
        R"("street":"1 Navy Way","zip":"22202","phone":"+1 555 0100","manager":12,)"
        R"("level":"senior","notes":"Found the moth. COBOL, compilers, nanoseconds.",)"
        R"("address":{"line":"Pentagon","floor":-1},"history":[]})",
        R"({"id":1000001,"name":"Tim","email":"t@x.io","age":0,"active":true,"score":0,)"
        R"("role":"viewer","tags":["a","b","c","d","e","f","g","h"],"created":"2024-02-29",)"
        R"("uuid":"ffffffff-ffff-4fff-bfff-ffffffffffff","country":"DE","city":"Köln",)"
        R"("street":"Straße 1","zip":"50667","phone":null,"manager":null,"level":"senior",)"
        R"("notes":"","address":{"line":"\"quoted\" line","floor":3},)"
        R"("history":[{"year":2020,"title":"你好"}]})"}},
      {"json_object",
       {ConstraintSpec::Kind::kJsonObject, ""},
       {R"({"city":"Paris","population":2148000,"landmarks":["Eiffel Tower","Louvre"],)"
        R"("river":{"name":"Seine","length_km":777},"capital":true})",
        R"({"ok":false,"items":[{"id":1,"tags":["x"]},{"id":2,"tags":[]}],"next":null})",
        R"({"nested":{"a":{"b":{"c":[1,[2,[3]]]}}},"text":"line one\\nline two","n":-0.5e-3})"}},
      {"grammar (GBNF)",
       {ConstraintSpec::Kind::kGrammar,
        "root ::= item (\"\\n\" item)*\n"
        "item ::= \"- \" [A-Za-z ,.']+ \" (\" [0-9]+ \")\"\n"},
       {"- Buy milk (2)\n- Call the plumber about the kitchen sink (1)\n- Read, think, write (3)",
        "- Water the plants (10)\n- Pay rent (1)",
        "- Book flights to Lisbon, Porto and Faro (42)"}},
      {"regex",
       {ConstraintSpec::Kind::kRegex, R"([A-Z][a-z]+ [A-Z][a-z]+, \d{4}-\d{2}-\d{2}, [a-z]+@[a-z]+\.(com|org))"},
       {"Grace Hopper, 1906-12-09, grace@navy.org", "Alan Turing, 1912-06-23, alan@bletchley.org",
        "Ada Lovelace, 1815-12-10, ada@analytical.com"}},
  };
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

// How many leading bytes of `text` the grammar can continue.
size_t ValidPrefix(const Grammar& grammar, const std::string& text) {
  GrammarMatcher matcher(grammar);
  MatcherState state = matcher.Start();
  for (size_t i = 0; i < text.size(); ++i) {
    if (!matcher.Advance(state, static_cast<uint8_t>(text[i]), &state)) return i;
  }
  return text.size();
}

// Walks `tokens` on a fresh constraint, timing FillMask before each token; counts the
// positions with one allowed token in *forced.
absl::Status Walk(std::shared_ptr<const CompiledConstraint> compiled,
                  const std::vector<int32_t>& tokens, std::vector<double>* seconds,
                  int64_t* forced) {
  std::unique_ptr<TokenConstraint> constraint = NewTokenConstraint(compiled);
  TokenMask mask;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Clock::time_point start = Clock::now();
    constraint->FillMask(&mask);
    seconds->push_back(Since(start));
    if (forced != nullptr && mask.Count() == 1) ++*forced;
    if (!mask.Allowed(tokens[i])) {
      return absl::InternalError(absl::StrFormat("token %d at %d is not in the mask", tokens[i], i));
    }
    RETURN_IF_ERROR(constraint->Sync(absl::MakeConstSpan(tokens).first(i + 1)));
  }
  return absl::OkStatus();
}

absl::Status BenchVocabulary(const std::string& label, const Tokenizer& tokenizer, int reps) {
  std::vector<int32_t> ends;
  if (tokenizer.vocabulary().eos_id) ends.push_back(*tokenizer.vocabulary().eos_id);
  Clock::time_point start = Clock::now();
  auto vocab = std::make_shared<const ConstraintVocabulary>(
      ConstraintVocabulary::FromTokenizer(tokenizer, ends));
  std::printf("%s: %d tokens; vocabulary tables (trie) %.1f ms, once per process\n",
              label.c_str(), tokenizer.vocab_size(), 1e3 * Since(start));
  for (const BenchCase& c : Cases()) {
    if (absl::Status s = CompileConstraint(c.spec, vocab).status(); !s.ok()) {
      std::printf("  %-28s not run: %s\n", c.name, std::string(s.message()).c_str());
      continue;
    }
    std::vector<double> compile_seconds;
    for (int i = 0; i < 5; ++i) {
      start = Clock::now();
      ASSIGN_OR_RETURN(auto compiled, CompileConstraint(c.spec, vocab));
      compile_seconds.push_back(Since(start));
    }
    ASSIGN_OR_RETURN(auto compiled, CompileConstraint(c.spec, vocab));
    std::vector<std::vector<int32_t>> walks;
    ASSIGN_OR_RETURN(Grammar grammar, GrammarForSpec(c.spec));
    for (const std::string& text : c.outputs) {
      const size_t valid = ValidPrefix(grammar, text);
      if (valid < text.size() || !GrammarMatches(grammar, text)) {
        return absl::InternalError(absl::StrFormat("%s: the output is not a sentence (byte %d: '%s')",
                                                   c.name, valid, text.substr(valid > 40 ? valid - 40 : 0, 60)));
      }
      ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.Encode(text));
      walks.push_back(std::move(ids));
    }
    // The first output on the fresh compile; then each other output once (new content on a
    // compile that has served one request); then all of them --reps times (steady state).
    std::vector<double> cold, fresh, steady;
    int64_t forced = 0, positions = 0;
    RETURN_IF_ERROR(Walk(compiled, walks[0], &cold, &forced));
    for (size_t w = 1; w < walks.size(); ++w) {
      RETURN_IF_ERROR(Walk(compiled, walks[w], &fresh, &forced));
    }
    for (int r = 0; r < reps; ++r) {
      for (const auto& w : walks) RETURN_IF_ERROR(Walk(compiled, w, &steady, nullptr));
    }
    for (const auto& w : walks) positions += static_cast<int64_t>(w.size());
    double cold_total = 0;
    for (double s : cold) cold_total += s;
    std::printf(
        "  %-24s compile %6.2f ms | first request %7.2f ms (p99 %6.2f us, max %6.2f us) | "
        "new output p50 %5.2f us p99 %6.2f us (%zu tokens) | steady p50 %5.2f us p99 %5.2f us | "
        "forced %.0f%%\n",
        c.name, 1e3 * Percentile(compile_seconds, 0.5), 1e3 * cold_total,
        1e6 * Percentile(cold, 0.99), 1e6 * Percentile(cold, 1.0), 1e6 * Percentile(fresh, 0.5), 1e6 * Percentile(fresh, 0.99),
        fresh.size(), 1e6 * Percentile(steady, 0.5), 1e6 * Percentile(steady, 0.99),
        100.0 * forced / std::max<int64_t>(positions, 1));
  }
  return absl::OkStatus();
}

// A greedy decode of up to `n` tokens through the round driver over the in-process target with
// the n-gram drafter, constrained by `compiled`, with or without forced tokens.
absl::StatusOr<GenerationResult> DriveWithForcedTokens(
    const Model& model, ThreadPool& pool, const SessionOptions& options,
    std::shared_ptr<const CompiledConstraint> compiled, const std::vector<int32_t>& prompt,
    int n, bool forced, int64_t* tokens) {
  Decoder decoder(model, pool);
  ModelState state;
  ASSIGN_OR_RETURN(state.cache, decoder.NewCache(options.context_size, KvType::kF16));
  ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(options.sampler, model.config().vocab_size));
  std::unique_ptr<TokenConstraint> target_side = NewTokenConstraint(compiled);
  std::unique_ptr<TokenConstraint> driver_side = NewTokenConstraint(compiled);
  const int64_t start = static_cast<int64_t>(prompt.size());
  VerifyScratch scratch;
  InProcessTarget target(decoder, state, sampler, options.sampler.seed, &scratch,
                         /*timed=*/false, OutputConstraint{target_side.get(), start});
  NgramDraft ngram(NgramOptions(), OutputConstraint{driver_side.get(), start});
  FixedDraftLength policy(8);
  RoundDriverOptions driver_options;
  driver_options.forced_tokens = forced ? driver_side.get() : nullptr;
  RoundDriver driver(target, &ngram, nullptr, policy, driver_options);
  RoundLimits limits;
  limits.stop_ids = options.stop_ids;
  limits.max_tokens = n;
  limits.context_size = options.context_size;
  std::vector<int32_t> sequence = prompt;
  return driver.Generate(sequence, limits, [tokens](std::vector<int32_t>& round) {
    *tokens += static_cast<int64_t>(round.size());
    return true;
  });
}

// Greedy decode of --n tokens after a short prompt, unconstrained and under each JSON
// constraint, side by side in rounds (medians of --reps rounds); prints tokens per second and
// the ratio to unconstrained.
absl::Status BenchDecode(const std::string& path, int n, int threads, int reps) {
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model, LoadGgufModel(path));
  ASSIGN_OR_RETURN(Tokenizer tokenizer, LoadTokenizer(path));
  std::vector<int32_t> stops;
  if (tokenizer.vocabulary().eos_id) stops.push_back(*tokenizer.vocabulary().eos_id);
  auto vocab = std::make_shared<const ConstraintVocabulary>(
      ConstraintVocabulary::FromTokenizer(tokenizer, stops));
  ThreadPool pool(threads);
  SessionOptions options;
  options.sampler.temperature = 0;
  options.context_size = 512;
  options.stop_ids = stops;
  ASSIGN_OR_RETURN(std::vector<int32_t> prompt, tokenizer.Encode("Reply in JSON: who was Ada?"));
  struct Variant {
    const char* name;
    std::shared_ptr<const CompiledConstraint> compiled;  // null: unconstrained
    std::vector<double> tokens_per_second;
  };
  std::vector<Variant> variants = {{"unconstrained", nullptr, {}}};
  for (const BenchCase& c : Cases()) {
    if (c.spec.kind != ConstraintSpec::Kind::kJsonSchema &&
        c.spec.kind != ConstraintSpec::Kind::kJsonObject) {
      continue;
    }
    ASSIGN_OR_RETURN(auto compiled, CompileConstraint(c.spec, vocab));
    variants.push_back({c.name, compiled, {}});
  }
  for (int r = 0; r <= reps; ++r) {  // round 0 warms caches and is not counted
    for (Variant& v : variants) {
      ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(*model, pool, options));
      std::unique_ptr<TokenConstraint> constraint =
          v.compiled ? NewTokenConstraint(v.compiled) : nullptr;
      int64_t tokens = 0;
      const Clock::time_point start = Clock::now();
      ASSIGN_OR_RETURN(GenerationResult result,
                       session->Generate(prompt, n, [&](int32_t) { return ++tokens, true; },
                                         constraint.get()));
      const double seconds = Since(start);
      (void)result;
      if (r > 0 && tokens > 0) v.tokens_per_second.push_back(tokens / seconds);
    }
  }
  // Forced tokens as free guesses: the 20-property schema through the round driver over the
  // target with the n-gram drafter (rarely a guess on this model's output), forced tokens off
  // and on; the speed-up is theirs.
  std::vector<double> forced_off, forced_on;
  int64_t forced_count = 0, forced_total = 0;
  for (int r = 0; r <= reps; ++r) {
    for (bool forced : {false, true}) {
      int64_t tokens = 0;
      ASSIGN_OR_RETURN(GenerationResult result,
                       DriveWithForcedTokens(*model, pool, options, variants[1].compiled, prompt, n,
                                             forced, &tokens));
      (void)result;
      if (r == 0 || tokens == 0) continue;
      const double tps = tokens / result.stats.decode_seconds;
      (forced ? forced_on : forced_off).push_back(tps);
      if (forced) {
        forced_count += result.speculation.forced;
        forced_total += tokens;
      }
    }
  }
  const double base = Percentile(variants[0].tokens_per_second, 0.5);
  std::printf("decode (greedy, %d tokens, prompt %zu, %d threads) on %s:\n", n, prompt.size(),
              threads, path.c_str());
  for (const Variant& v : variants) {
    const double tps = Percentile(v.tokens_per_second, 0.5);
    std::printf("  %-28s %7.2f tokens/s  %.3fx\n", v.name, tps, base > 0 ? tps / base : 0);
  }
  const double off = Percentile(forced_off, 0.5), on = Percentile(forced_on, 0.5);
  std::printf("  json_schema, round driver + n-gram: forced tokens off %.2f tokens/s, on %.2f "
              "tokens/s (%.2fx; %.0f%% of the output forced)\n",
              off, on, off > 0 ? on / off : 0,
              100.0 * forced_count / std::max<int64_t>(forced_total, 1));
  return absl::OkStatus();
}

int Run(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr, "tandem-constraint-bench: takes no arguments (see --help)\n");
    return 2;
  }
  std::string shared = absl::GetFlag(FLAGS_shared);
  if (shared.empty()) {
    const char* env = std::getenv("TANDEM_SHARED");
    shared = env != nullptr ? env : "../shared";
  }
  struct Vocab {
    std::string label, path, pre;
  };
  const std::vector<Vocab> vocabs = {
      {"starcoder2 (49,152)", shared + "/models/vocab/ggml-vocab-starcoder.gguf", "gpt-2"},
      {"llama-3 (128,256)", shared + "/models/llama3-bpe-tokenizer", "llama-bpe"},
  };
  if (const std::string model = absl::GetFlag(FLAGS_model); !model.empty()) {
    const absl::Status status = BenchDecode(model, absl::GetFlag(FLAGS_n),
                                            absl::GetFlag(FLAGS_threads), absl::GetFlag(FLAGS_reps));
    if (!status.ok()) {
      std::fprintf(stderr, "tandem-constraint-bench: %s\n", std::string(status.message()).c_str());
      return 1;
    }
    return 0;
  }
  for (const Vocab& v : vocabs) {
    LoadOptions options;
    options.pre_tokenizer = v.pre;
    absl::StatusOr<Tokenizer> tokenizer = LoadTokenizer(v.path, options);
    absl::Status status =
        tokenizer.ok() ? BenchVocabulary(v.label, *tokenizer, absl::GetFlag(FLAGS_reps))
                       : tokenizer.status();
    if (!status.ok()) {
      std::fprintf(stderr, "tandem-constraint-bench: %s: %s\n", v.label.c_str(),
                   std::string(status.message()).c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  absl::StatusOr<std::vector<std::string>> args = tandem::ParseCommandLine(
      argc, argv,
      {"tandem-constraint-bench", "0.1.0",
       "Times compiling constraints and computing token masks on real vocabularies.\n"
       "usage: tandem-constraint-bench [--shared DIR] [--reps 20]\n"
       "       tandem-constraint-bench --model GGUF [--n 64] [--threads 2] [--reps 5]",
       "tools/bench/constraint_bench.cc"});
  if (!args.ok()) {
    std::fprintf(stderr, "tandem-constraint-bench: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  return tandem::Run(*args);
}
