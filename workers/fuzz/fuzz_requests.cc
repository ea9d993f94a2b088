#include "workers/fuzz/fuzz_requests.h"

#include <string>

namespace tandem::fuzzing {

int32_t ReadTokenId(FuzzReader& in) {
  if (in.Byte() % 4 != 0) return in.Raw<uint16_t>() % kFuzzVocab;
  return in.Int();
}

void ReadSampling(FuzzReader& in, v1::SamplingParams* s) {
  const uint8_t preset = in.Byte();
  switch (preset % 8) {
    case 0:
      s->set_temperature(0.8f);
      s->set_repetition_penalty(1e-38f);
      s->set_penalty_window(64);  // as the coordinator sends it
      return;
    case 1:
      s->set_temperature(0.8f);
      s->set_top_p(1.0f);
      s->set_min_p(0.05f);
      return;
    case 2:
      s->set_temperature(1e30f);
      return;
    case 3:
      s->set_temperature(0.8f);
      s->set_top_p(0.95f);
      s->set_repetition_penalty(1e38f);
      s->set_penalty_window(64);
      return;
    default:
      break;
  }
  const uint8_t set = in.Byte();
  if (set & 1) s->set_temperature(in.Float());
  if (set & 2) s->set_top_k(in.Int());
  if (set & 4) s->set_top_p(in.Float());
  if (set & 8) s->set_min_p(in.Float());
  if (set & 16) s->set_repetition_penalty(in.Float());
  if (set & 32) s->set_penalty_window(in.Int());
  if (set & 64) s->set_seed(in.Raw<uint64_t>());
  if (set & 128) {  // issue #30: OpenAI's logit_bias and penalties, any values
    s->set_presence_penalty(in.Float());
    s->set_frequency_penalty(in.Float());
    const int entries = in.Byte() % 5;
    for (int i = 0; i < entries; ++i) (*s->mutable_logit_bias())[ReadTokenId(in)] = in.Float();
  }
}

// Up to `max_size` printable ASCII characters and newlines: text a client could send (a
// proto string must be UTF-8) that reaches the grammar and regex parsers.
std::string ReadText(FuzzReader& in, size_t max_size) {
  std::string text = in.Bytes(max_size);
  for (char& c : text) {
    const uint8_t b = static_cast<uint8_t>(c) % 96;
    c = b == 95 ? '\n' : static_cast<char>(' ' + b);
  }
  return text;
}

void ReadConstraint(FuzzReader& in, v1::Constraint* c) {
  switch (in.Byte() % 10) {
    case 0:
    case 1:
      c->set_grammar(kDigitsGrammar);
      return;
    case 2:
      c->set_grammar("root ::= (\"yes\" | \"no\") \".\"\nspace ::= \" \"?");
      return;
    case 3:
      c->set_grammar("root ::= \"a\" undefined");  // refers to a rule it lacks
      return;
    case 4:
      c->set_grammar(ReadText(in, 48));
      return;
    case 5:
      c->set_regex(ReadText(in, 24));
      return;
    case 6:
      c->mutable_json_object();
      return;
    case 7:
      c->mutable_json_schema()->set_schema(
          in.Bool() ? R"({"type": "object", "properties": {"a": {"type": "integer"}}})" : "{\"ty");
      return;
    default:
      return;  // none: clears
  }
}

}  // namespace tandem::fuzzing
