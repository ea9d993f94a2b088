// tandem-chat MODEL [-p TEXT] [--system TEXT] [--format NAME]
//      [--temp 0.8] [--top-k 40] [--top-p 0.95] [--min-p 0.05] [--repeat-penalty 1.0]
//      [--repeat-last-n 64] [--seed 0] [--ctx 4096] [--kv f16|f32|i8] [--max-tokens 512]
//      [--ignore-eos]
//      [--threads N] [--draft MODEL] [--draft-tokens 4|auto] [--coupling standard|gumbel]
//      [--pipeline]
// tandem-chat --server HOST:PORT [--timeout 600] [--tls] [--tls-ca PEM]
//      [--tls-cert PEM --tls-key PEM] [--api-key-file FILE]
//      [the same flags but --ctx, --kv, --threads, --draft: those are the workers' and the
//      coordinator's, and refused with exit status 2]
// With --server: --tls (or --tls-ca, the CA to trust instead of the system's) talks TLS; the
// API key comes from --api-key-file or $TANDEM_API_KEY and travels as
// `authorization: Bearer KEY`.
// The sampling flags default to the one set of defaults (core/generation/sampling_defaults.h),
// which a coordinator also applies to unset fields.
//
// With -p: answers once, the reply alone on stdout. Otherwise each line of stdin is a user
// turn; "/reset" starts over; an empty line or end of input quits. Statistics go to stderr.
// Exit status 2 for bad flags, missing files or incompatible models; 1 for a failed turn.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "client/chat/chat_engine.h"
#include "client/chat/remote_chat.h"
#include "core/base/command_line.h"
#include "core/decoder/load_report.h"
#include "core/generation/sampling_defaults.h"
#include "core/generation/speculation_defaults.h"
#include "wire/small_file.h"
#include "wire/tls_credentials.h"

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
ABSL_FLAG(uint64_t, seed, 0, "random seed");
ABSL_FLAG(int, ctx, 4096, "context size in tokens (capped at the model's)");
ABSL_FLAG(std::string, kv, "f16",
          "KV cache type: f32, f16 or i8 (i8: under half of f16's bytes; greedy output close "
          "to f32's, not equal: README 'KV cache types')");
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
ABSL_FLAG(std::string, server, "", "talk to a coordinator at HOST:PORT instead of running MODEL");
ABSL_FLAG(double, timeout, 600, "with --server: seconds a turn may take before it is abandoned");
ABSL_FLAG(bool, tls, false, "with --server: TLS, trusting the system's CAs (or --tls-ca)");
ABSL_FLAG(std::string, tls_ca, "", "with --server: TLS, trusting this PEM CA certificate");
ABSL_FLAG(std::string, tls_cert, "", "with --server: PEM client certificate to present");
ABSL_FLAG(std::string, tls_key, "", "with --server: PEM private key of --tls-cert");
ABSL_FLAG(std::string, api_key_file, "",
          "with --server: file whose first line is the API key (default: $TANDEM_API_KEY)");

namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "tandem-chat: %s\n", message.c_str());
  return code;
}

// The flags of `given` that mean nothing in the chosen mode, as "--kv, --ctx" (empty: none).
std::string MisplacedFlags(const std::vector<std::string>& given, bool remote) {
  // --server: the workers own their cache and threads, the coordinator its draft.
  // In-process: there is no coordinator to wait for.
  const std::vector<std::string> remote_only = {"timeout",  "tls",     "tls_ca",
                                                "tls_cert", "tls_key", "api_key_file"};
  const std::vector<std::string> local_only = {"ctx", "kv", "threads", "draft"};
  const std::vector<std::string>& refused = remote ? local_only : remote_only;
  std::string out;
  for (const std::string& flag : given) {
    if (std::find(refused.begin(), refused.end(), flag) == refused.end()) continue;
    const std::string dashed = "--" + absl::StrReplaceAll(flag, {{"_", "-"}});
    if (out.find(dashed) == std::string::npos) out += (out.empty() ? "" : ", ") + dashed;
  }
  return out;
}

void PrintStats(const tandem::TurnResult& turn, bool speculative) {
  const tandem::GenerationStats& s = turn.generation.stats;
  std::string line = absl::StrFormat(
      "[prompt %d tokens (%d cached) | prefill %.1f tok/s | decode %d tokens, %.1f tok/s",
      s.prompt_tokens + s.reused_tokens, s.reused_tokens, s.prefill_tokens_per_second(),
      s.generated_tokens, s.decode_tokens_per_second());
  if (speculative) {
    const tandem::SpeculationStats& sp = turn.generation.speculation;
    line +=
        absl::StrFormat(" | draft acceptance %.1f %% (%d/%d), %.2f tokens/round",
                        100 * sp.acceptance_rate(), sp.accepted, sp.drafted, sp.tokens_per_round());
    if (sp.cost_model && sp.cost_model->predicted_alone_tokens_per_second > 0) {
      line += absl::StrFormat(" | k auto: last %d, expects %.0f tok/s (alone %.0f)",
                              sp.final_draft_tokens, sp.cost_model->predicted_tokens_per_second,
                              sp.cost_model->predicted_alone_tokens_per_second);
    }
    if (sp.pipelined) {
      line += absl::StrFormat(" | pipelined: %d of %d rounds pre-drafted", sp.predrafted_rounds,
                              sp.rounds);
    }
  }
  if (turn.generation.stop_reason == tandem::StopReason::kStopId && !turn.stop_text.empty()) {
    line +=
        absl::StrFormat(" | end of turn %s (id %d)", turn.stop_text, turn.generation.stop_token);
  }
  std::fprintf(stderr, "%s]\n", line.c_str());
}

// The --tls* and API key flags into `remote`; false (with a message) when one is wrong.
bool ReadRemoteSecurity(tandem::RemoteChatOptions& remote, std::string* error) {
  const tandem::TlsFiles files = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                                  absl::GetFlag(FLAGS_tls_ca)};
  absl::StatusOr<tandem::TlsPem> pem = tandem::ReadTlsFiles(files);
  if (!pem.ok()) {
    *error = std::string(pem.status().message());
    return false;
  }
  if (absl::GetFlag(FLAGS_tls) || !files.ca.empty() || !files.cert.empty()) {
    remote.credentials = tandem::TlsChannelCredentials(*pem);
  }
  if (const std::string path = absl::GetFlag(FLAGS_api_key_file); !path.empty()) {
    absl::StatusOr<std::string> text = tandem::ReadSmallFile(path, "--api-key-file", 4096);
    if (!text.ok()) {
      *error = std::string(text.status().message());
      return false;
    }
    remote.api_key = std::string(absl::StripAsciiWhitespace(text->substr(0, text->find('\n'))));
    if (remote.api_key.empty()) {
      *error = "--api-key-file '" + path + "' holds no key on its first line";
      return false;
    }
  } else if (const char* env = std::getenv("TANDEM_API_KEY"); env != nullptr) {
    remote.api_key = std::string(absl::StripAsciiWhitespace(env));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> given;
  absl::StatusOr<std::vector<std::string>> args = tandem::ParseCommandLine(
      argc, argv,
      {"tandem-chat", "0.1.0",
       "Chat with a model in-process (GGUF file or Hugging Face folder).\n"
       "usage: tandem-chat MODEL|--server HOST:PORT [-p TEXT] [--system TEXT] [--format NAME] "
       "[--temp T]\n"
       "       [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--repeat-last-n N]\n"
       "       [--seed S] [--ctx N] [--kv f16|f32|i8] [--max-tokens N] [--ignore-eos] [--threads "
       "N]\n"
       "       [--draft MODEL] [--draft-tokens K|auto] [--coupling standard|gumbel] "
       "[--pipeline]\n"
       "       [--timeout S] [--tls] [--tls-ca PEM]\n"
       "       [--tls-cert PEM --tls-key PEM] [--api-key-file FILE]\n"
       "With -p it answers once; otherwise each stdin line is a turn, /reset starts over,\n"
       "an empty line quits. With --server, --ctx, --kv, --threads and --draft are the\n"
       "workers' and the coordinator's settings and refused; --timeout bounds each turn.",
       "client/chat/main.cc"},
      &given);
  if (!args.ok()) return Fail(2, std::string(args.status().message()));
  const std::string server = absl::GetFlag(FLAGS_server);
  if (server.empty() && args->size() != 1) {
    return Fail(2, "expected one MODEL argument or --server (see --help)");
  }
  if (!server.empty() && !args->empty()) {
    return Fail(2, "give either MODEL or --server, not both");
  }
  if (const std::string misplaced = MisplacedFlags(given, !server.empty()); !misplaced.empty()) {
    return Fail(2, server.empty()
                       ? misplaced + " only applies with --server"
                       : misplaced +
                             " cannot apply with --server: the coordinator's workers choose "
                             "their context, KV cache and threads, and the coordinator its draft");
  }
  const double timeout = absl::GetFlag(FLAGS_timeout);
  if (!(timeout > 0)) return Fail(2, "--timeout must be > 0 seconds");

  tandem::ChatOptions options;
  if (!args->empty()) options.model_path = (*args)[0];
  options.draft_path = absl::GetFlag(FLAGS_draft);
  options.format = absl::GetFlag(FLAGS_format);
  options.system = absl::GetFlag(FLAGS_system);
  options.sampler.temperature = absl::GetFlag(FLAGS_temp);
  options.sampler.top_k = absl::GetFlag(FLAGS_top_k);
  options.sampler.top_p = absl::GetFlag(FLAGS_top_p);
  options.sampler.min_p = absl::GetFlag(FLAGS_min_p);
  options.sampler.repetition_penalty = absl::GetFlag(FLAGS_repeat_penalty);
  options.sampler.penalty_window = absl::GetFlag(FLAGS_repeat_last_n);
  options.sampler.seed = absl::GetFlag(FLAGS_seed);
  if (const std::string coupling = absl::GetFlag(FLAGS_coupling); coupling == "gumbel") {
    options.sampler.coupling = tandem::Coupling::kGumbel;
  } else if (coupling != "standard") {
    return Fail(2, "--coupling: '" + coupling + "' is not 'standard' or 'gumbel'");
  }
  options.context_size = absl::GetFlag(FLAGS_ctx);
  options.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.ignore_eos = absl::GetFlag(FLAGS_ignore_eos);
  options.pipelined = absl::GetFlag(FLAGS_pipeline);
  options.threads = absl::GetFlag(FLAGS_threads);
  if (options.context_size < 1) return Fail(2, "--ctx must be >= 1");
  if (options.max_tokens < 1) return Fail(2, "--max-tokens must be >= 1");
  if (options.threads < 1) return Fail(2, "--threads must be >= 1");
  absl::StatusOr<tandem::KvType> kv = tandem::ParseKvType(absl::GetFlag(FLAGS_kv));
  if (!kv.ok()) return Fail(2, "--kv: " + std::string(kv.status().message()));
  options.kv_type = *kv;
  const std::string draft_tokens = absl::GetFlag(FLAGS_draft_tokens);
  if (draft_tokens == "auto") {
    options.adaptive_draft = true;
  } else if (!absl::SimpleAtoi(draft_tokens, &options.draft_tokens) || options.draft_tokens < 1) {
    return Fail(2, "--draft-tokens: '" + draft_tokens + "' is not a count >= 1 or 'auto'");
  }

  // One conversation, in-process or through a coordinator.
  std::function<absl::StatusOr<tandem::TurnResult>(absl::string_view,
                                                   const std::function<void(absl::string_view)>&)>
      turn_fn;
  std::function<void()> reset_fn;
  bool speculative = false;
  std::unique_ptr<tandem::ChatEngine> local;
  std::unique_ptr<tandem::RemoteChat> remote;
  if (server.empty()) {
    const bool bar = isatty(STDERR_FILENO) == 1;
    tandem::LoadReport target_load(options.model_path, stderr, bar);
    target_load.Prefetch();
    tandem::LoadReport draft_load(options.draft_path, stderr, bar);
    if (!options.draft_path.empty()) draft_load.Prefetch();
    absl::StatusOr<std::unique_ptr<tandem::ChatEngine>> engine =
        tandem::ChatEngine::Create(options);
    if (!engine.ok()) return Fail(2, engine.status().ToString());
    local = *std::move(engine);
    target_load.Loaded(local->model());
    if (local->draft_model() != nullptr) draft_load.Loaded(*local->draft_model());
    for (const std::string& notice : local->notices()) {
      std::fprintf(stderr, "tandem-chat: %s\n", notice.c_str());
    }
    turn_fn = [&](absl::string_view text, const std::function<void(absl::string_view)>& out) {
      return local->Turn(text, out);
    };
    reset_fn = [&] { local->Reset(); };
    speculative = local->speculative();
  } else {
    tandem::RemoteChatOptions remote_options;
    remote_options.turn_timeout = absl::Seconds(timeout);
    remote_options.connect_timeout =
        std::min(remote_options.connect_timeout, absl::Seconds(timeout));
    if (std::string error; !ReadRemoteSecurity(remote_options, &error)) return Fail(2, error);
    absl::StatusOr<std::unique_ptr<tandem::RemoteChat>> chat =
        tandem::RemoteChat::Create(server, options, remote_options);
    if (!chat.ok()) return Fail(2, chat.status().ToString());
    remote = *std::move(chat);
    turn_fn = [&](absl::string_view text, const std::function<void(absl::string_view)>& out) {
      return remote->Turn(text, out);
    };
    reset_fn = [&] { remote->Reset(); };
    speculative = remote->speculative();
  }
  auto print = [](absl::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };

  const std::string prompt = absl::GetFlag(FLAGS_p);
  if (!prompt.empty()) {
    absl::StatusOr<tandem::TurnResult> turn = turn_fn(prompt, print);
    if (!turn.ok()) return Fail(1, turn.status().ToString());
    std::fputc('\n', stdout);
    std::fflush(stdout);  // the reply line before the statistics on stderr
    PrintStats(*turn, speculative);
    return 0;
  }
  std::string line;
  while (std::getline(std::cin, line) && !line.empty()) {
    if (line == "/reset") {
      reset_fn();
      std::fprintf(stderr, "[conversation reset]\n");
      continue;
    }
    absl::StatusOr<tandem::TurnResult> turn = turn_fn(line, print);
    if (!turn.ok()) {
      std::fprintf(stderr, "tandem-chat: %s\n", turn.status().ToString().c_str());
      continue;
    }
    std::fputc('\n', stdout);
    std::fflush(stdout);  // the reply line before the statistics on stderr
    PrintStats(*turn, speculative);
  }
  return 0;
}
