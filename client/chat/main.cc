// tandem-chat MODEL [-p TEXT] [--system TEXT] [--format NAME]
//      [--temp 0.8] [--top-k 40] [--top-p 0.95] [--min-p 0.05] [--repeat-penalty 1.0]
//      [--repeat-last-n 64] [--seed S] [--ctx 4096] [--kv f16|f32|i8] [--max-tokens 512]
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
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/chat/chat_engine.h"
#include "client/chat/chat_options.h"
#include "client/chat/remote_chat.h"
#include "core/decoder/load_report.h"
#include "wire/small_file.h"
#include "wire/tls_credentials.h"

namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "tandem-chat: %s\n", message.c_str());
  return code;
}

void PrintStats(const tandem::TurnResult& turn, bool speculative, uint64_t seed) {
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
    if (sp.predicted > 0) {
      line += absl::StrFormat(" | prediction: %d of %d guesses kept in %d rounds",
                              sp.predicted_accepted, sp.predicted, sp.predicted_rounds);
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
  line += absl::StrFormat(" | seed %d", seed);  // --seed N repeats the run
  std::fprintf(stderr, "%s]\n", line.c_str());
}

// The TLS and API key options into `remote`; false (with a message) when one is wrong.
bool ReadRemoteSecurity(const tandem::ChatProcessOptions& options,
                        tandem::RemoteChatOptions& remote, std::string* error) {
  absl::StatusOr<tandem::TlsPem> pem = tandem::ReadTlsFiles(options.tls_files);
  if (!pem.ok()) {
    *error = std::string(pem.status().message());
    return false;
  }
  if (options.tls || !options.tls_files.ca.empty() || !options.tls_files.cert.empty()) {
    remote.credentials = tandem::TlsChannelCredentials(*pem);
  }
  if (const std::string& path = options.api_key_file; !path.empty()) {
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

// One conversation, in-process (`local`) or through a coordinator (`remote`).
struct Conversation {
  std::unique_ptr<tandem::ChatEngine> local;
  std::unique_ptr<tandem::RemoteChat> remote;

  absl::StatusOr<tandem::TurnResult> Turn(absl::string_view text,
                                          const std::function<void(absl::string_view)>& out) {
    return local != nullptr ? local->Turn(text, out) : remote->Turn(text, out);
  }
  void Reset() { local != nullptr ? local->Reset() : remote->Reset(); }
  bool speculative() const {
    return local != nullptr ? local->speculative() : remote->speculative();
  }
};

// Loads the models (with a progress report) and prints the engine's notices; 0 or the exit
// status.
int OpenLocal(const tandem::ChatOptions& options, Conversation& conversation) {
  const bool bar = isatty(STDERR_FILENO) == 1;
  tandem::LoadReport target_load(options.model_path, stderr, bar);
  target_load.Prefetch();
  tandem::LoadReport draft_load(options.draft_path, stderr, bar);
  if (!options.draft_path.empty()) draft_load.Prefetch();
  absl::StatusOr<std::unique_ptr<tandem::ChatEngine>> engine = tandem::ChatEngine::Create(options);
  if (!engine.ok()) return Fail(2, engine.status().ToString());
  conversation.local = *std::move(engine);
  target_load.Loaded(conversation.local->model());
  if (conversation.local->draft_model() != nullptr) {
    draft_load.Loaded(*conversation.local->draft_model());
  }
  for (const std::string& notice : conversation.local->notices()) {
    std::fprintf(stderr, "tandem-chat: %s\n", notice.c_str());
  }
  return 0;
}

// Connects to the coordinator; 0 or the exit status.
int OpenRemote(const tandem::ChatProcessOptions& options, Conversation& conversation) {
  tandem::RemoteChatOptions remote_options;
  remote_options.turn_timeout = options.timeout;
  remote_options.tools_json = options.tools_json;
  remote_options.tool_choice = options.tool_choice;
  remote_options.prediction = options.prediction;
  remote_options.connect_timeout = std::min(remote_options.connect_timeout, options.timeout);
  if (std::string error; !ReadRemoteSecurity(options, remote_options, &error)) {
    return Fail(2, error);
  }
  absl::StatusOr<std::unique_ptr<tandem::RemoteChat>> chat =
      tandem::RemoteChat::Create(options.server, options.chat, remote_options);
  if (!chat.ok()) return Fail(2, chat.status().ToString());
  conversation.remote = *std::move(chat);
  return 0;
}

void Print(absl::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// Answers -p once, or each line of stdin until an empty one. Exit status 1 when -p fails.
int Run(const tandem::ChatProcessOptions& options) {
  Conversation conversation;
  if (const int failed = options.server.empty() ? OpenLocal(options.chat, conversation)
                                                : OpenRemote(options, conversation);
      failed != 0) {
    return failed;
  }
  if (!options.prompt.empty()) {
    absl::StatusOr<tandem::TurnResult> turn = conversation.Turn(options.prompt, Print);
    if (!turn.ok()) return Fail(1, turn.status().ToString());
    std::fputc('\n', stdout);
    std::fflush(stdout);  // the reply line before the statistics on stderr
    PrintStats(*turn, conversation.speculative(), options.chat.sampler.seed);
    return 0;
  }
  std::string line;
  while (std::getline(std::cin, line) && !line.empty()) {
    if (line == "/reset") {
      conversation.Reset();
      std::fprintf(stderr, "[conversation reset]\n");
      continue;
    }
    absl::StatusOr<tandem::TurnResult> turn = conversation.Turn(line, Print);
    if (!turn.ok()) {
      std::fprintf(stderr, "tandem-chat: %s\n", turn.status().ToString().c_str());
      continue;
    }
    std::fputc('\n', stdout);
    std::fflush(stdout);  // the reply line before the statistics on stderr
    PrintStats(*turn, conversation.speculative(), options.chat.sampler.seed);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<tandem::ChatProcessOptions> options = tandem::ChatOptionsFromFlags(argc, argv);
  if (!options.ok()) return Fail(2, std::string(options.status().message()));
  return Run(*options);
}
