// tandem-tokenize: text <-> token ids with a model's tokenizer, and chat-template rendering.
// See client/tokenize/tokenize_tool.h for the modes and exit codes.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "client/tokenize/tokenize_tool.h"
#include "core/base/command_line.h"

ABSL_FLAG(std::string, model, "", "GGUF file, Hugging Face folder, tokenizer.json/.model");
ABSL_FLAG(bool, add_special, false, "add BOS/EOS as the model's metadata says");
ABSL_FLAG(bool, parse_special, false, "recognise control tokens in the text (decode: render them)");
ABSL_FLAG(bool, decode, false, "read token ids and print their text");
ABSL_FLAG(bool, bench, false, "tokenise the input repeatedly and print MB/s");
ABSL_FLAG(std::string, pre, "gpt-2",
          "pre-tokenizer family of an encoder.json + vocab.bpe folder (e.g. llama-bpe)");
ABSL_FLAG(std::string, chat_template, "", "Jinja chat template file to render");
ABSL_FLAG(std::string, messages, "", "JSON file: a list of messages, or {\"messages\": ...}");
ABSL_FLAG(std::string, bos_token, "", "bos_token as the template sees it");
ABSL_FLAG(std::string, eos_token, "", "eos_token as the template sees it");
ABSL_FLAG(bool, add_generation_prompt, false, "end with the assistant turn's header");

int main(int argc, char** argv) {
  absl::StatusOr<std::vector<std::string>> args = tandem::ParseCommandLine(
      argc, argv,
      {"tandem-tokenize", "0.1.0",
       "Text <-> token ids with a model's tokenizer, and chat-template rendering.\n"
       "usage: tandem-tokenize --model FILE_OR_DIR [--add-special] [--parse-special] [--decode]\n"
       "                       [--bench] [--pre FAMILY] < input\n"
       "       tandem-tokenize --chat-template FILE --messages MESSAGES.json [--bos-token S]\n"
       "                       [--eos-token S] [--add-generation-prompt]",
       "client/tokenize/main.cc"});
  if (!args.ok()) {
    std::fprintf(stderr, "tandem-tokenize: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  if (!args->empty()) {
    std::fprintf(stderr, "tandem-tokenize: unexpected argument '%s' (see --help)\n",
                 args->front().c_str());
    return 2;
  }
  tandem::TokenizeToolOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  options.add_special = absl::GetFlag(FLAGS_add_special);
  options.parse_special = absl::GetFlag(FLAGS_parse_special);
  options.decode = absl::GetFlag(FLAGS_decode);
  options.bench = absl::GetFlag(FLAGS_bench);
  options.pre_tokenizer = absl::GetFlag(FLAGS_pre);
  options.chat_template = absl::GetFlag(FLAGS_chat_template);
  options.messages = absl::GetFlag(FLAGS_messages);
  options.bos_token = absl::GetFlag(FLAGS_bos_token);
  options.eos_token = absl::GetFlag(FLAGS_eos_token);
  options.add_generation_prompt = absl::GetFlag(FLAGS_add_generation_prompt);

  std::string input;
  if (!options.model.empty()) {
    input.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  const tandem::ToolResult result = tandem::RunTokenizeTool(options, input);
  std::fwrite(result.out.data(), 1, result.out.size(), stdout);
  std::fwrite(result.err.data(), 1, result.err.size(), stderr);
  return result.exit_code;
}
