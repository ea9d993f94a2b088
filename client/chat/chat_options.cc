#include "client/chat/chat_options.h"

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/base/command_line.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/generation/sampling_defaults.h"
#include "core/generation/speculation_defaults.h"
#include "core/kernels/matmul.h"
#include "wire/small_file.h"

ABSL_FLAG(std::string, p, "", "answer this prompt once and exit");
ABSL_FLAG(std::string, system, "", "system message");
ABSL_FLAG(std::string, format, "",
          "chat format: chatml, llama2, llama3, mistral, phi3, gemma, zephyr, raw "
          "(default: the model's own template, else the format its special tokens belong to, "
          "else raw)");
ABSL_FLAG(float, temp, tandem::SamplingDefaults::kTemperature, "temperature; 0 is greedy");
ABSL_FLAG(int, top_k, tandem::SamplingDefaults::kTopK, "keep the k most likely tokens; 0 disables");
ABSL_FLAG(float, top_p, tandem::SamplingDefaults::kTopP, "nucleus mass in (0, 1]; 1 disables");
ABSL_FLAG(float, min_p, tandem::SamplingDefaults::kMinP,
          "drop tokens below min_p times the best, in [0, 1); 0 disables");
ABSL_FLAG(float, repeat_penalty, tandem::SamplingDefaults::kRepetitionPenalty,
          "repetition penalty > 0; 1 disables");
ABSL_FLAG(int, repeat_last_n, tandem::SamplingDefaults::kPenaltyWindow,
          "tokens the repetition penalty looks back at, >= 0; 0 disables");
// --- #30 sampling ---
ABSL_FLAG(std::vector<std::string>, logit_bias, {},
          "ID=BIAS[,ID=BIAS...]: add BIAS in [-100, 100] to token ID's logit; -100 bans it");
ABSL_FLAG(float, presence_penalty, tandem::SamplingDefaults::kPresencePenalty,
          "OpenAI's presence penalty in [-2, 2] over the reply's tokens; 0 disables");
ABSL_FLAG(float, frequency_penalty, tandem::SamplingDefaults::kFrequencyPenalty,
          "OpenAI's frequency penalty in [-2, 2] over the reply's tokens; 0 disables");
// --- end ---
ABSL_FLAG(std::optional<uint64_t>, seed, std::nullopt,
          "random seed (unset: a fresh one each run, printed in the stats line to repeat it)");
ABSL_FLAG(int, ctx, 4096, "context size in tokens (capped at the model's)");
ABSL_FLAG(std::string, kv, "f16",
          "KV cache type: f32, f16 or i8 (i8: under half of f16's bytes; greedy output close "
          "to f32's, not equal: README 'KV cache types')");
// --- #31 activations flags ---
ABSL_FLAG(std::string, activations, "int16",
          "quantized matmuls' activation precision, target and draft: int16 or int8 (README "
          "'Activation precision'; float weights ignore it)");
// --- end ---
ABSL_FLAG(int, max_tokens, tandem::SpeculationDefaults::kChatMaxTokens, "most tokens per reply");
ABSL_FLAG(bool, ignore_eos, false,
          "no end-of-turn token ends a reply: each runs to --max-tokens (benchmarks)");
ABSL_FLAG(int, threads, 2, "threads for the forward passes (shared by both models)");
ABSL_FLAG(std::string, draft, "", "draft model for speculative decoding (GGUF or HF folder)");
ABSL_FLAG(std::string, draft_tokens, std::to_string(tandem::SpeculationDefaults::kDraftTokens),
          "guesses per round, or 'auto' to adapt");
ABSL_FLAG(std::string, coupling, "standard",
          "how guesses become tokens: standard (p/q rule) or gumbel (seeded output equals the "
          "target alone's, whatever the draft)");
ABSL_FLAG(bool, pipeline, false,
          "pipelined rounds: the draft guesses the next round while the target verifies");
ABSL_FLAG(std::string, json_schema, "",
          "a JSON Schema file: every reply is a JSON instance of it (constrained sampling)");
ABSL_FLAG(std::string, grammar, "",
          "a GBNF grammar file (llama.cpp's format, start rule root): every reply matches it");
ABSL_FLAG(std::string, regex, "", "a regular expression every whole reply matches");
ABSL_FLAG(std::string, tools, "",
          "with --server: a JSON file of OpenAI-style tools ([{\"type\": \"function\", "
          "\"function\": {\"name\", \"description\", \"parameters\"}}]) the model may call");
ABSL_FLAG(std::string, tool_choice, "",
          "with --tools: auto (default), none, required, or a tool's name to force its call");
ABSL_FLAG(std::string, prediction, "",
          "with --server: a file holding the text each reply is expected to mostly be (a file "
          "being edited): its tokens are guesses, verified, so replies are unchanged, only faster");
ABSL_FLAG(std::string, server, "", "talk to a coordinator at HOST:PORT instead of running MODEL");
ABSL_FLAG(double, timeout, 600, "with --server: seconds a turn may take before it is abandoned");
ABSL_FLAG(bool, tls, false, "with --server: TLS, trusting the system's CAs (or --tls-ca)");
ABSL_FLAG(std::string, tls_ca, "", "with --server: TLS, trusting this PEM CA certificate");
ABSL_FLAG(std::string, tls_cert, "", "with --server: PEM client certificate to present");
ABSL_FLAG(std::string, tls_key, "", "with --server: PEM private key of --tls-cert");
ABSL_FLAG(std::string, api_key_file, "",
          "with --server: file whose first line is the API key (default: $TANDEM_API_KEY)");

namespace tandem {
namespace {

// A schema or grammar file, as the coordinator bounds a constraint's text (1 MiB).
constexpr size_t kMaxConstraintFileBytes = 1 << 20;

constexpr char kUsage[] =
    "Chat with a model in-process (GGUF file or Hugging Face folder).\n"
    "usage: tandem-chat MODEL|--server HOST:PORT [-p TEXT] [--system TEXT] [--format NAME] "
    "[--temp T]\n"
    "       [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--repeat-last-n N]\n"
    "       [--seed S] [--ctx N] [--kv f16|f32|i8] [--max-tokens N] [--ignore-eos] [--threads "
    "N]\n"
    "       [--activations int16|int8]\n"
    "       [--draft MODEL] [--draft-tokens K|auto] [--coupling standard|gumbel] "
    "[--pipeline]\n"
    "       [--json-schema FILE | --grammar FILE | --regex RE]\n"
    "       [--tools FILE [--tool-choice auto|none|required|NAME]] [--prediction FILE] "
    "(with --server)\n"
    "       [--timeout S] [--tls] [--tls-ca PEM]\n"
    "       [--tls-cert PEM --tls-key PEM] [--api-key-file FILE]\n"
    "With -p it answers once; otherwise each stdin line is a turn, /reset starts over,\n"
    "an empty line quits. With --server, --ctx, --kv, --activations, --threads and --draft\n"
    "are the workers' and the coordinator's settings and refused; --timeout bounds each turn.";

// The flags of `given` that mean nothing in the chosen mode, as "--kv, --ctx" (empty: none).
std::string MisplacedFlags(const std::vector<std::string>& given, bool remote) {
  // --server: the workers own their cache and threads, the coordinator its draft.
  // In-process: there is no coordinator to wait for.
  const std::vector<std::string> remote_only = {"timeout",  "tls",          "tls_ca",
                                                "tls_cert", "tls_key",      "api_key_file",
                                                "tools",    "tool_choice",  "prediction"};
  const std::vector<std::string> local_only = {"ctx", "kv", "threads", "draft", "activations"};
  const std::vector<std::string>& refused = remote ? local_only : remote_only;
  std::string out;
  for (const std::string& flag : given) {
    if (std::find(refused.begin(), refused.end(), flag) == refused.end()) continue;
    const std::string dashed = "--" + absl::StrReplaceAll(flag, {{"_", "-"}});
    if (out.find(dashed) == std::string::npos) out += (out.empty() ? "" : ", ") + dashed;
  }
  return out;
}

// MODEL or --server, and the flags that mean nothing in the mode chosen.
absl::Status CheckMode(const std::vector<std::string>& args, const std::string& server,
                       const std::vector<std::string>& given) {
  if (server.empty() && args.size() != 1) {
    return absl::InvalidArgumentError("expected one MODEL argument or --server (see --help)");
  }
  if (!server.empty() && !args.empty()) {
    return absl::InvalidArgumentError("give either MODEL or --server, not both");
  }
  if (const std::string misplaced = MisplacedFlags(given, !server.empty()); !misplaced.empty()) {
    return absl::InvalidArgumentError(
        server.empty() ? misplaced + " only applies with --server"
                       : misplaced +
                             " cannot apply with --server: the coordinator's workers choose "
                             "their context, KV cache, activations and threads, and the "
                             "coordinator its draft");
  }
  return absl::OkStatus();
}

// --logit-bias ID=BIAS,...: by increasing id; a repeated id, a bad id or bias is refused
// (the ranges are Sampler::Create's).
absl::StatusOr<std::vector<LogitBias>> LogitBiasFromFlag(const std::vector<std::string>& items) {
  std::vector<LogitBias> out;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    LogitBias entry;
    if (eq == std::string::npos || !absl::SimpleAtoi(item.substr(0, eq), &entry.token) ||
        entry.token < 0 || !absl::SimpleAtof(item.substr(eq + 1), &entry.bias)) {
      return absl::InvalidArgumentError("--logit-bias: '" + item + "' is not ID=BIAS");
    }
    out.push_back(entry);
  }
  std::sort(out.begin(), out.end(),
            [](const LogitBias& a, const LogitBias& b) { return a.token < b.token; });
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i].token == out[i - 1].token) {
      return absl::InvalidArgumentError(
          absl::StrCat("--logit-bias: token ", out[i].token, " is given twice"));
    }
  }
  return out;
}

// A seed for a run that named none: random, so that "random" sampling does not repeat.
uint64_t FreshSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

// The model, format, sampling and speculation flags.
absl::StatusOr<ChatOptions> ChatFromFlags() {
  ChatOptions options;
  options.draft_path = absl::GetFlag(FLAGS_draft);
  options.format = absl::GetFlag(FLAGS_format);
  options.system = absl::GetFlag(FLAGS_system);
  options.sampler.temperature = absl::GetFlag(FLAGS_temp);
  options.sampler.top_k = absl::GetFlag(FLAGS_top_k);
  options.sampler.top_p = absl::GetFlag(FLAGS_top_p);
  options.sampler.min_p = absl::GetFlag(FLAGS_min_p);
  options.sampler.repetition_penalty = absl::GetFlag(FLAGS_repeat_penalty);
  options.sampler.penalty_window = absl::GetFlag(FLAGS_repeat_last_n);
  ASSIGN_OR_RETURN(options.sampler.logit_bias, LogitBiasFromFlag(absl::GetFlag(FLAGS_logit_bias)));
  options.sampler.presence_penalty = absl::GetFlag(FLAGS_presence_penalty);
  options.sampler.frequency_penalty = absl::GetFlag(FLAGS_frequency_penalty);
  const std::optional<uint64_t> seed = absl::GetFlag(FLAGS_seed);
  options.sampler.seed = seed.has_value() ? *seed : FreshSeed();
  if (const std::string coupling = absl::GetFlag(FLAGS_coupling); coupling == "gumbel") {
    options.sampler.coupling = Coupling::kGumbel;
  } else if (coupling != "standard") {
    return absl::InvalidArgumentError("--coupling: '" + coupling +
                                      "' is not 'standard' or 'gumbel'");
  }
  options.context_size = absl::GetFlag(FLAGS_ctx);
  options.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.ignore_eos = absl::GetFlag(FLAGS_ignore_eos);
  options.pipelined = absl::GetFlag(FLAGS_pipeline);
  options.threads = absl::GetFlag(FLAGS_threads);
  if (options.context_size < 1) return absl::InvalidArgumentError("--ctx must be >= 1");
  if (options.max_tokens < 1) return absl::InvalidArgumentError("--max-tokens must be >= 1");
  if (options.threads < 1) return absl::InvalidArgumentError("--threads must be >= 1");
  absl::StatusOr<KvType> kv = ParseKvType(absl::GetFlag(FLAGS_kv));
  if (!kv.ok()) return absl::InvalidArgumentError("--kv: " + std::string(kv.status().message()));
  options.kv_type = *kv;
  // --- #31 activations flags ---
  absl::StatusOr<ActivationPrecision> activations =
      ParseActivationPrecision(absl::GetFlag(FLAGS_activations));
  if (!activations.ok()) {
    return absl::InvalidArgumentError("--activations: " +
                                      std::string(activations.status().message()));
  }
  options.model_load.activations = *activations;
  // --- end ---
  const std::string draft_tokens = absl::GetFlag(FLAGS_draft_tokens);
  if (draft_tokens == "auto") {
    options.adaptive_draft = true;
  } else if (!absl::SimpleAtoi(draft_tokens, &options.draft_tokens) || options.draft_tokens < 1) {
    return absl::InvalidArgumentError("--draft-tokens: '" + draft_tokens +
                                      "' is not a count >= 1 or 'auto'");
  }
  return options;
}

// A constraint file's text; every failure is a bad command line naming the flag and the file.
absl::StatusOr<std::string> ConstraintFile(absl::string_view flag, const std::string& path) {
  absl::StatusOr<std::string> text =
      ReadSmallFile(path, absl::StrCat(flag, " file"), kMaxConstraintFileBytes);
  if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
  if (text->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " file '", path, "' is empty"));
  }
  return text;
}

// --json-schema FILE, --grammar FILE or --regex RE: at most one.
absl::StatusOr<ConstraintSpec> ConstraintFromFlags() {
  const std::string schema = absl::GetFlag(FLAGS_json_schema);
  const std::string grammar = absl::GetFlag(FLAGS_grammar);
  const std::string regex = absl::GetFlag(FLAGS_regex);
  std::vector<std::string> given;
  if (!schema.empty()) given.push_back("--json-schema");
  if (!grammar.empty()) given.push_back("--grammar");
  if (!regex.empty()) given.push_back("--regex");
  if (given.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::StrJoin(given, ", "), ": give at most one constraint"));
  }
  ConstraintSpec spec;
  if (!schema.empty()) {
    ASSIGN_OR_RETURN(spec.text, ConstraintFile("--json-schema", schema));
    // Checked here so the message names the file; what the schema says is the compiler's.
    if (absl::StatusOr<json::Value> parsed = json::Parse(spec.text); !parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--json-schema file '", schema,
                                                     "' is not JSON: ", parsed.status().message()));
    }
    spec.kind = ConstraintSpec::Kind::kJsonSchema;
  } else if (!grammar.empty()) {
    ASSIGN_OR_RETURN(spec.text, ConstraintFile("--grammar", grammar));
    spec.kind = ConstraintSpec::Kind::kGrammar;
  } else if (!regex.empty()) {
    spec = {ConstraintSpec::Kind::kRegex, regex};
  }
  return spec;
}

}  // namespace

absl::StatusOr<ChatProcessOptions> ChatOptionsFromFlags(int argc, char** argv) {
  std::vector<std::string> given;
  ASSIGN_OR_RETURN(
      const std::vector<std::string> args,
      ParseCommandLine(argc, argv, {"tandem-chat", "0.1.0", kUsage, "client/chat/chat_options.cc"},
                       &given));
  ChatProcessOptions options;
  options.server = absl::GetFlag(FLAGS_server);
  RETURN_IF_ERROR(CheckMode(args, options.server, given));
  const double timeout = absl::GetFlag(FLAGS_timeout);
  if (!(timeout > 0)) return absl::InvalidArgumentError("--timeout must be > 0 seconds");
  options.timeout = absl::Seconds(timeout);
  ASSIGN_OR_RETURN(options.chat, ChatFromFlags());
  ASSIGN_OR_RETURN(options.chat.constraint, ConstraintFromFlags());
  if (!args.empty()) options.chat.model_path = args[0];
  options.prompt = absl::GetFlag(FLAGS_p);
  options.tls = absl::GetFlag(FLAGS_tls);
  options.tls_files = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                       absl::GetFlag(FLAGS_tls_ca)};
  options.api_key_file = absl::GetFlag(FLAGS_api_key_file);
  if (const std::string tools = absl::GetFlag(FLAGS_tools); !tools.empty()) {
    ASSIGN_OR_RETURN(options.tools_json, ConstraintFile("--tools", tools));
  }
  options.tool_choice = absl::GetFlag(FLAGS_tool_choice);
  if (const std::string prediction = absl::GetFlag(FLAGS_prediction); !prediction.empty()) {
    ASSIGN_OR_RETURN(options.prediction, ConstraintFile("--prediction", prediction));
  }
  if (!options.tool_choice.empty() && options.tools_json.empty()) {
    return absl::InvalidArgumentError("--tool-choice needs --tools");
  }
  return options;
}

}  // namespace tandem
