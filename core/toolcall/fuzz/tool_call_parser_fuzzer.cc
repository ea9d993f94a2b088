// libFuzzer target for the streaming tool-call parsers (tool_call_parser.h). The first byte
// picks the family, the second the mode (tool_call_seeds.h):
//  - raw: the rest is the model's output;
//  - generated: the rest drives a generator of well-formed output in the family's format
//    (text around calls, parallel calls, arguments with escapes, nesting and marker-like
//    strings), sometimes cut short; when whole, the parse must give exactly its calls and text.
// Either way the output is fed bytewise and in random chunks, and the reassembled deltas must
// equal ParseToolCalls of the whole text: same content, same calls; each call's first delta
// has its name and later ones none. Nothing may crash or hang.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/fuzz_assert.h"
#include "core/base/fuzz_reader.h"
#include "core/toolcall/tool_call_parser.h"

namespace tandem::toolcall {
namespace {

using fuzzing::FuzzReader;

constexpr size_t kMaxRawBytes = 4096;

struct Generated {
  std::string text;
  ParsedMessage expected;
};

// Well-formed output in one family's format, from fuzz bytes.
class OutputGenerator {
 public:
  explicit OutputGenerator(FuzzReader& in) : in_(in) {}

  Generated Make(ToolCallFormat format) {
    Generated out;
    const int calls = in_.Byte() % 4;
    if (calls == 0) {
      out.expected.content = Text();
      out.text = format == ToolCallFormat::kFunctionaryV32 ? "all\n" + out.expected.content
                                                           : out.expected.content;
      return out;
    }
    for (int i = 0; i < calls; ++i) {
      ToolCall call;
      call.name = in_.Choose<const char*>({"get_weather", "f", "search.web", "a-b_c9"});
      call.arguments = Value(0, /*object=*/true);
      if (format == ToolCallFormat::kMistral && in_.Bool()) {
        call.id = in_.Choose<const char*>({"abc123XYZ", "000000000", "Zz9Zz9Zz9"});
      }
      out.expected.calls.push_back(call);
    }
    const std::string before = in_.Bool() ? Text() : "";
    const std::string after = in_.Bool() && format != ToolCallFormat::kLlama3Json ? Text() : "";
    out.expected.content = before + after;
    // functionary v3.2: text is a segment of its own, whose recipient is "all".
    const bool v32 = format == ToolCallFormat::kFunctionaryV32;
    out.text = (v32 && !before.empty() ? "all\n" : "") + before +
               Calls(format, out.expected.calls, !before.empty()) + After(format, after);
    return out;
  }

 private:
  std::string Space() { return in_.Choose<const char*>({"", " ", "\n", "\n  "}); }

  std::string Text() {
    std::vector<std::string> words;
    const int n = 1 + in_.Byte() % 3;
    for (int i = 0; i < n; ++i) {
      words.push_back(in_.Choose<const char*>({"Sure", "let me check", "h\xc3\xa9llo", "42", "x<y",
                                               "a [b]", "semi;colon", "{brace}", "x>y", "tick`s"}));
    }
    return absl::StrJoin(words, " ");
  }

  // A JSON value as a model writes it; `object`: an object (arguments are).
  std::string Value(int depth, bool object) {
    // Past depth 3 only scalars: the nesting stays far below the parser's limit.
    const uint8_t kind = object ? 0 : depth < 3 ? in_.Byte() % 6 : 1 + in_.Byte() % 4;
    switch (kind) {
      case 0:
      case 5: {
        const bool is_object = kind == 0;
        std::vector<std::string> items;
        const int n = in_.Byte() % 3;
        for (int i = 0; i < n; ++i) {
          const std::string value = Value(depth + 1, false);
          items.push_back(is_object ? absl::StrCat(String(), Space(), ":", Space(), value) : value);
        }
        const std::string inside = absl::StrJoin(items, absl::StrCat(",", Space()));
        return is_object ? absl::StrCat("{", inside, "}") : absl::StrCat("[", inside, "]");
      }
      case 1:
        return String();
      case 2:
        return in_.Choose<const char*>({"0", "-1", "2.5", "1e3", "-0.25E-2", "123456789012"});
      default:
        return in_.Choose<const char*>({"true", "false", "null"});
    }
  }

  std::string String() {
    return absl::StrCat("\"",
                        in_.Choose<const char*>({"city", "Paris", "a \\\"q\\\"", "\\u00e9t\\u00e9",
                                                 "<tool_call>", "[TOOL_CALLS]", ">>>all\\n", "```",
                                                 "<\xef\xbd\x9ctool\xe2\x96\x81"
                                                 "call\xe2\x96\x81"
                                                 "end\xef\xbd\x9c>",
                                                 "</function>", "", "back\\\\slash"}),
                        "\"");
  }

  // The call object of a JSON-object family, keys in a random order.
  std::string Object(const ToolCall& call, absl::string_view name_key, absl::string_view args_key,
                     absl::string_view extra) {
    std::vector<std::string> members = {
        absl::StrCat("\"", name_key, "\":", Space(), "\"", call.name, "\""),
        absl::StrCat("\"", args_key, "\":", Space(), call.arguments)};
    if (!call.id.empty()) members.push_back(absl::StrCat("\"id\": \"", call.id, "\""));
    if (!extra.empty() && in_.Bool()) members.push_back(std::string(extra));
    for (size_t i = members.size(); i > 1; --i) std::swap(members[i - 1], members[in_.Byte() % i]);
    return absl::StrCat("{", Space(), absl::StrJoin(members, ", "), Space(), "}");
  }

  std::string Objects(const std::vector<ToolCall>& calls, absl::string_view name_key,
                      absl::string_view args_key, absl::string_view extra,
                      absl::string_view separator) {
    std::vector<std::string> objects;
    for (const ToolCall& call : calls) objects.push_back(Object(call, name_key, args_key, extra));
    return absl::StrJoin(objects, separator);
  }

  std::string Calls(ToolCallFormat format, const std::vector<ToolCall>& calls, bool text_before) {
    std::string out;
    switch (format) {
      case ToolCallFormat::kLlama3Json:
        out = text_before || in_.Bool() ? "<|python_tag|>" : Space();
        return out + Objects(calls, "name", in_.Bool() ? "parameters" : "arguments",
                             "\"type\": \"function\"", absl::StrCat(Space(), ";", Space()));
      case ToolCallFormat::kHermes:
        for (const ToolCall& call : calls) {
          absl::StrAppend(&out, Space(), "<tool_call>", Space(),
                          Object(call, "name", "arguments", "\"x\": [1]"), Space(), "</tool_call>");
        }
        return out;
      case ToolCallFormat::kMistral:
        return absl::StrCat(Space(), "[TOOL_CALLS]", Space(), "[",
                            Objects(calls, "name", "arguments", "", ", "), "]");
      case ToolCallFormat::kFunctionaryV31:
        for (const ToolCall& call : calls) {
          absl::StrAppend(&out, Space(), "<function=", call.name, ">", call.arguments,
                          "</function>");
        }
        return out;
      case ToolCallFormat::kFunctionaryV32:
        for (size_t i = 0; i < calls.size(); ++i) {
          const bool bare = i == 0 && !text_before && in_.Bool();
          absl::StrAppend(&out, bare ? "" : ">>>", calls[i].name, "\n", calls[i].arguments,
                          Space());
        }
        return out;
      case ToolCallFormat::kFirefunctionV2:
        return absl::StrCat(" functools[", Objects(calls, "name", "arguments", "", ", "), "]");
      case ToolCallFormat::kCommandR: {
        const std::string list =
            Objects(calls, "tool_name", "parameters", "\"tool_call_id\": \"0\"", ",\n    ");
        if (in_.Bool()) return absl::StrCat("<|START_ACTION|>[\n    ", list, "\n]<|END_ACTION|>");
        return absl::StrCat("Action: ```json\n[\n    ", list, "\n]\n```");
      }
      case ToolCallFormat::kDeepSeekR1:
        out =
            "\n<\xef\xbd\x9ctool\xe2\x96\x81"
            "calls\xe2\x96\x81"
            "begin\xef\xbd\x9c>";
        for (size_t i = 0; i < calls.size(); ++i) {
          absl::StrAppend(&out, i > 0 ? "\n" : "",
                          "<\xef\xbd\x9ctool\xe2\x96\x81"
                          "call\xe2\x96\x81"
                          "begin\xef\xbd\x9c>"
                          "function<\xef\xbd\x9ctool\xe2\x96\x81"
                          "sep\xef\xbd\x9c>",
                          calls[i].name, "\n```json\n", calls[i].arguments,
                          "\n```<\xef\xbd\x9ctool\xe2\x96\x81"
                          "call\xe2\x96\x81"
                          "end\xef\xbd\x9c>");
        }
        return out +
               "<\xef\xbd\x9ctool\xe2\x96\x81"
               "calls\xe2\x96\x81"
               "end\xef\xbd\x9c>";
      case ToolCallFormat::kNone:
        break;
    }
    return out;
  }

  std::string After(ToolCallFormat format, const std::string& after) {
    if (after.empty()) return "";
    if (format == ToolCallFormat::kFunctionaryV32) return ">>>all\n" + after;
    return Space() + after;
  }

  FuzzReader& in_;
};

std::string Describe(const ParsedMessage& message) {
  std::string out = absl::StrCat("content '", message.content, "'");
  for (const ToolCall& call : message.calls) {
    absl::StrAppend(&out, "; call '", call.name, "' id '", call.id, "' args '", call.arguments,
                    "'");
  }
  return out;
}

// Feeds `chunks` and reassembles the deltas, checking their shape.
ParsedMessage Stream(ToolCallFormat format, const std::vector<absl::string_view>& chunks) {
  std::unique_ptr<ToolCallParser> parser = *NewToolCallParser(format);
  ParsedMessage message;
  auto append = [&](const ParsedDelta& delta) {
    for (const ToolCallDelta& call : delta.calls) {
      const int known = static_cast<int>(message.calls.size());
      TANDEM_FUZZ_ASSERT(call.index == known || call.index + 1 == known,
                         "delta for call %d after %d calls", call.index, known);
      TANDEM_FUZZ_ASSERT(call.name.empty() == (call.index + 1 == known),
                         "call %d: name '%s' in the wrong delta", call.index, call.name.c_str());
      AppendParsedDelta(ParsedDelta{"", {call}}, message);
    }
    message.content += delta.content;
  };
  for (absl::string_view chunk : chunks) append(parser->Feed(chunk));
  append(parser->Finish());
  return message;
}

void CheckChunkings(ToolCallFormat format, absl::string_view text, uint32_t seed) {
  const std::string whole = Describe(ParseToolCalls(format, text));
  std::vector<absl::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  const std::string bytewise = Describe(Stream(format, bytes));
  TANDEM_FUZZ_ASSERT(bytewise == whole, "bytewise: %s\nwhole: %s", bytewise.c_str(), whole.c_str());
  std::minstd_rand gen(seed);
  std::vector<absl::string_view> chunks;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = std::uniform_int_distribution<size_t>(1, 16)(gen);
    chunks.push_back(text.substr(pos, length));
    pos += length;
  }
  const std::string chunked = Describe(Stream(format, chunks));
  TANDEM_FUZZ_ASSERT(chunked == whole, "chunked: %s\nwhole: %s", chunked.c_str(), whole.c_str());
}

}  // namespace
}  // namespace tandem::toolcall

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem::toolcall;
  tandem::fuzzing::FuzzReader in(data, size);
  const std::vector<ToolCallFormat> formats = AllToolCallFormats();
  const ToolCallFormat format = formats[in.Byte() % formats.size()];
  const bool generated = in.Byte() & 1;
  const uint32_t seed = static_cast<uint32_t>(size);
  if (!generated) {
    const size_t skip = size < 2 ? size : 2;
    const absl::string_view text(reinterpret_cast<const char*>(data) + skip,
                                 std::min(size - skip, kMaxRawBytes));
    CheckChunkings(format, text, seed);
    return 0;
  }
  Generated output = OutputGenerator(in).Make(format);
  // One input in four is cut short: then only the stream properties hold.
  const bool cut = in.Byte() % 4 == 0;
  if (cut) output.text.resize(in.Byte() * output.text.size() / 256);
  CheckChunkings(format, output.text, seed);
  if (!cut) {
    const std::string parsed = Describe(ParseToolCalls(format, output.text));
    const std::string expected = Describe(output.expected);
    TANDEM_FUZZ_ASSERT(parsed == expected, "%s output:\n%s\nparsed:   %s\nexpected: %s",
                       std::string(ToolCallFormatName(format)).c_str(), output.text.c_str(),
                       parsed.c_str(), expected.c_str());
  }
  return 0;
}
