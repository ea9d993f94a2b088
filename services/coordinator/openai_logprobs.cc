#include "services/coordinator/openai_logprobs.h"

#include <string>
#include <utility>

#include "core/base/utf8_repair.h"

namespace tandem {
namespace {

using Tokens = google::protobuf::RepeatedPtrField<v1::TokenLogprobs>;

// Code points of well-formed UTF-8: every byte but the continuation bytes 10xxxxxx.
int64_t CodePoints(const std::string& text) {
  int64_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

json::Object ChatEntry(const v1::TokenLogprob& t) {
  json::Array bytes;
  for (unsigned char c : t.token_bytes()) bytes.emplace_back(static_cast<int64_t>(c));
  return {{"token", utf8::ReplaceInvalid(t.token_bytes())},
          {"logprob", static_cast<double>(t.logprob())},
          {"bytes", std::move(bytes)}};
}

}  // namespace

json::Value OpenAiLogprobs::Of(const Tokens& tokens) {
  return endpoint_ == OpenAiEndpoint::kChatCompletions ? Chat(tokens) : Completion(tokens);
}

json::Value OpenAiLogprobs::Chat(const Tokens& tokens) const {
  json::Array content;
  for (const v1::TokenLogprobs& l : tokens) {
    json::Object entry = ChatEntry(l.token());
    json::Array top;
    for (const v1::TokenLogprob& t : l.top()) top.emplace_back(ChatEntry(t));
    entry.Set("top_logprobs", std::move(top));
    content.emplace_back(std::move(entry));
  }
  return json::Object{{"content", std::move(content)}, {"refusal", nullptr}};
}

json::Value OpenAiLogprobs::Completion(const Tokens& tokens) {
  json::Array texts, logprobs, tops, offsets;
  for (const v1::TokenLogprobs& l : tokens) {
    std::string text = utf8::ReplaceInvalid(l.token().token_bytes());
    offsets.emplace_back(text_offset_);
    text_offset_ += CodePoints(text);
    texts.emplace_back(std::move(text));
    logprobs.emplace_back(static_cast<double>(l.token().logprob()));
    json::Object top;  // token text -> logprob; two ids of one text keep the likelier
    for (const v1::TokenLogprob& t : l.top()) {
      std::string key = utf8::ReplaceInvalid(t.token_bytes());
      if (!top.Contains(key)) top.Set(std::move(key), static_cast<double>(t.logprob()));
    }
    tops.emplace_back(std::move(top));
  }
  return json::Object{{"tokens", std::move(texts)},
                      {"token_logprobs", std::move(logprobs)},
                      {"top_logprobs", std::move(tops)},
                      {"text_offset", std::move(offsets)}};
}

}  // namespace tandem
