// tandem-chat's command line: every flag, parsed and checked into one plain struct, so that
// the parsing is tested without starting a process (chat_options_test.cc) and main.cc only
// runs what the struct says.
//
// The flags (ABSL_FLAGs) are defined in chat_options.cc, which only tandem-chat and its test
// link; no library reads them.
#ifndef TANDEM_CLIENT_CHAT_CHAT_OPTIONS_H_
#define TANDEM_CLIENT_CHAT_CHAT_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/chat/chat_engine.h"
#include "wire/tls_credentials.h"

namespace tandem {

// What one tandem-chat process runs with; every field comes from a flag or the argument.
struct ChatProcessOptions {
  // MODEL and the model, format, sampling and speculation flags (with --server, those the
  // coordinator's request takes).
  ChatOptions chat;
  std::string server;      // --server HOST:PORT of a coordinator; empty: in-process
  std::string prompt;      // -p: answer it once; empty: a conversation on stdin
  absl::Duration timeout;  // --timeout: with --server, the longest turn
  // With --server: TLS (--tls, or any of the files) and the API key; files read at start-up.
  bool tls = false;
  TlsFiles tls_files;        // --tls-cert, --tls-key, --tls-ca
  std::string api_key_file;  // --api-key-file; empty: $TANDEM_API_KEY, if set
  // With --server: the --tools file's text (OpenAI's tools array) and --tool-choice.
  std::string tools_json;
  std::string tool_choice;
  // With --server: the --prediction file's text.
  std::string prediction;
};

// Parses argv (argv[0] is the program). --help and --version print and exit(0).
// kInvalidArgument for a bad command line (a flag that means nothing in the chosen mode
// included), its message naming the flag as tandem-chat prints it (after "tandem-chat: ", exit
// status 2).
absl::StatusOr<ChatProcessOptions> ChatOptionsFromFlags(int argc, char** argv);

}  // namespace tandem

#endif  // TANDEM_CLIENT_CHAT_CHAT_OPTIONS_H_
