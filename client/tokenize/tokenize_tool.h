// The logic of tandem-tokenize (client/tokenize/main.cc holds only the flags):
//
//   tandem-tokenize --model FILE_OR_DIR [--add-special] [--parse-special] [--decode] [--bench]
//   tandem-tokenize --chat-template FILE --messages MESSAGES.json [--bos-token S]
//                   [--eos-token S] [--add-generation-prompt]
//
// Encoding reads all of the input as one text and prints the ids separated by spaces on one
// line; --decode reads whitespace-separated ids and prints their text (special tokens rendered
// when --parse-special is set); --bench tokenises the input repeatedly and prints the speed.
// Chat templates print the rendered prompt exactly, with no newline added. MESSAGES.json is a
// list of messages, or an object with "messages" whose other keys (tools, ...) the template
// also sees.
//
// Exit status: 0 on success, 1 for errors in the work itself (a template error, including
// the template's raise_exception message; a corrupt model; ids outside the vocabulary),
// 2 for a bad command line or a file that cannot be found or read.
#ifndef TANDEM_CLIENT_TOKENIZE_TOKENIZE_TOOL_H_
#define TANDEM_CLIENT_TOKENIZE_TOKENIZE_TOOL_H_

#include <string>

#include "absl/strings/string_view.h"

namespace tandem {

struct TokenizeToolOptions {
  std::string model;
  bool add_special = false;
  bool parse_special = false;
  bool decode = false;
  bool bench = false;
  // Pre-tokenizer family for encoder.json + vocab.bpe folders.
  std::string pre_tokenizer = "gpt-2";

  std::string chat_template;  // a template file
  std::string messages;       // a JSON file
  std::string bos_token;
  std::string eos_token;
  bool add_generation_prompt = false;
};

struct ToolResult {
  int exit_code = 0;
  std::string out;  // for stdout
  std::string err;  // for stderr: one line per error
};

ToolResult RunTokenizeTool(const TokenizeToolOptions& options, absl::string_view input);

}  // namespace tandem

#endif  // TANDEM_CLIENT_TOKENIZE_TOKENIZE_TOOL_H_
