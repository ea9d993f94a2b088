// libFuzzer target for the coordinator's request handling: each input decodes into up to four
// tandem.v1.GenerateRequest (text, token ids, chat or no prompt; any sampling settings,
// including NaN, infinities and extremes; stop ids and strings; speculation settings; session
// ids) and CloseSession calls, run in order against a Coordinator over an in-process target
// (stories260K) and draft (the distilled draft), loaded once, with a 64-token context.
// Properties: every call ends OK or with a code Generator.Generate documents; an OK stream is
// deltas (ids in the vocabulary, text valid UTF-8, at most max_tokens ids) then one final;
// once the input's named sessions are closed, no session is left on either worker.
// Strings are valid UTF-8, as the gRPC layer guarantees (it refuses to parse anything else).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/base/fuzz_assert.h"
#include "core/base/fuzz_reader.h"
#include "core/base/utf8.h"
#include "prometheus/registry.h"
#include "services/coordinator/coordinator.h"
#include "workers/fuzz/fuzz_requests.h"
#include "workers/fuzz/in_process_worker.h"

namespace tandem {
namespace {

using fuzzing::FuzzReader;
using fuzzing::ReadSampling;
using fuzzing::ReadTokenId;

constexpr int kContext = 64;
constexpr int32_t kDefaultMaxTokens = 8;
constexpr int32_t kVocab = 512;

struct Stack {
  Stack()
      : target(WorkerRole::kTarget, "models/stories260K/stories260K.gguf", kContext, 8),
        draft(WorkerRole::kDraft, "models/stories260K/derived/stories-draft-distilled.gguf",
              kContext, 8),
        metrics(registry) {
    std::vector<std::unique_ptr<WorkerClient>> targets, drafts;
    targets.push_back(std::make_unique<WorkerClient>("target", target.Channel()));
    drafts.push_back(std::make_unique<WorkerClient>("draft", draft.Channel()));
    CoordinatorOptions options;
    options.default_max_tokens = kDefaultMaxTokens;
    options.max_sessions = 4;
    absl::StatusOr<std::unique_ptr<Coordinator>> created =
        Coordinator::Create(options, std::move(targets), std::move(drafts), &metrics);
    if (!created.ok()) {
      std::fprintf(stderr, "generate_fuzzer: %s\n", created.status().ToString().c_str());
      std::exit(2);
    }
    coordinator = *std::move(created);
  }
  fuzzing::InProcessWorker target, draft;
  prometheus::Registry registry;
  CoordinatorMetrics metrics;
  std::unique_ptr<Coordinator> coordinator;
};

Stack& TheStack() {
  static Stack* stack = new Stack();  // never destroyed: gRPC threads outlive main()
  return *stack;
}

// The longest valid UTF-8 made of the bytes, invalid bytes dropped.
std::string ValidUtf8(const std::string& bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = utf8::CharLength(bytes, i);
    if (utf8::Validate(absl::string_view(bytes).substr(i, n)).ok()) out.append(bytes, i, n);
    i += utf8::Validate(absl::string_view(bytes).substr(i, n)).ok() ? n : 1;
  }
  return out;
}

std::string Text(FuzzReader& in, size_t max_size) {
  switch (in.Byte() % 8) {
    case 0:
      return "Once upon a time";
    case 1:
      return "";
    case 2:
      return std::string(400, 'a');  // longer than the context
    case 3:
      return "<s></s><unk> \xE2\x96\x81 \xF0\x9F\x99\x82";
    default:
      return ValidUtf8(in.Bytes(max_size));
  }
}

void ReadPrompt(FuzzReader& in, v1::GenerateRequest* r) {
  switch (in.Byte() % 4) {
    case 0:
      r->set_text(Text(in, 48));
      break;
    case 1: {
      const int n = in.Byte() % 16 == 15 ? kContext + 8 : in.Byte() % 12;
      r->mutable_token_ids();
      for (int i = 0; i < n; ++i) r->mutable_token_ids()->add_ids(ReadTokenId(in));
      break;
    }
    case 2: {
      v1::ChatConversation* chat = r->mutable_chat();
      for (int i = in.Byte() % 4; i > 0; --i) {
        v1::ChatMessage* m = chat->add_messages();
        m->set_role(in.Choose<const char*>({"user", "assistant", "system", "", "tool", "x"}));
        m->set_content(Text(in, 24));
        if (in.Bool()) m->set_name(Text(in, 8));
      }
      if (in.Bool()) chat->set_add_generation_prompt(in.Bool());
      chat->set_format(in.Choose<const char*>({"", "", "raw", "chatml", "llama2", "bogus"}));
      if (in.Bool()) {
        chat->set_template_kwargs_json(
            in.Bool() ? Text(in, 32)
                      : in.Choose<const char*>({"{\"datetime\": \"x\"}", "{\"messages\": []}",
                                                "[]", "{\"a\": {\"b\": [1, null]}}", "{"}));
      }
      break;
    }
    default:
      break;  // no prompt
  }
}

v1::GenerateRequest ReadRequest(FuzzReader& in) {
  v1::GenerateRequest r;
  ReadPrompt(in, &r);
  if (in.Bool()) ReadSampling(in, r.mutable_sampling());
  r.set_max_tokens(in.Pick<int32_t>({1, 2, 4, 8, 0, -1, INT32_MIN, INT32_MAX, 64, 3}));
  for (int i = in.Byte() % 4; i > 0; --i) r.add_stop_token_ids(ReadTokenId(in));
  for (int i = in.Byte() % 3; i > 0; --i) r.add_stop_strings(Text(in, 6));
  const uint8_t flags = in.Byte();
  if (flags & 1) r.mutable_speculation()->set_enabled(flags & 2);
  if (flags & 4) r.mutable_speculation()->set_draft_tokens(in.Int());
  if (flags & 8) r.mutable_speculation()->set_adaptive(true);
  r.set_require_existing_session(flags & 16);
  r.set_ignore_eos(flags & 32);
  if (flags & 64) {  // the known couplings and two no enum names
    r.mutable_speculation()->set_coupling(
        static_cast<v1::Coupling>(in.Pick<int>({0, 1, 2, 3, -1})));
  }
  r.set_session_id(in.Choose<const char*>({"", "", "", "a", "b", "c"}));
  r.set_n(in.Pick<int32_t>({0, 0, 0, 1, 2, 3, -1, 9}));  // #30: choices (9: over the limit)
  return r;
}

std::string Summary(const v1::GenerateRequest& r) {
  std::string s = r.ShortDebugString();
  return s.size() > 1500 ? s.substr(0, 1500) + "..." : s;
}

bool Documented(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

// What one choice (GenerateResponse.choice_index) of a reply received.
struct ChoiceSeen {
  std::vector<int32_t> ids;
  int finals = 0;
  bool delta_after_final = false;
};

void RunGenerate(Coordinator& coordinator, const v1::GenerateRequest& r) {
  const int32_t n = std::max(1, r.n());
  std::vector<ChoiceSeen> choices(static_cast<size_t>(std::clamp(n, 1, 16)));
  bool bad_text = false, bad_index = false;
  const absl::Status status = coordinator.Generate(
      r,
      [&](const v1::GenerateResponse& response) {
        const int32_t index = response.choice_index();
        if (index < 0 || index >= static_cast<int32_t>(choices.size())) {
          bad_index = true;
          return true;
        }
        ChoiceSeen& c = choices[index];
        if (response.has_delta()) {
          c.delta_after_final = c.delta_after_final || c.finals > 0;
          c.ids.insert(c.ids.end(), response.delta().token_ids().begin(),
                       response.delta().token_ids().end());
          bad_text = bad_text || !utf8::Validate(response.delta().text()).ok();
        } else {
          ++c.finals;
        }
        return true;
      },
      [] { return false; });
  const std::string request = Summary(r);
  TANDEM_FUZZ_ASSERT(Documented(status.code()), "Generate gave %s for %s",
                     status.ToString().c_str(), request.c_str());
  TANDEM_FUZZ_ASSERT(!bad_text, "a TokenDelta.text is not valid UTF-8 for %s", request.c_str());
  TANDEM_FUZZ_ASSERT(!bad_index, "a choice_index outside [0, %d) for %s", n, request.c_str());
  if (!status.ok()) return;
  const int32_t max_tokens = r.max_tokens() > 0 ? r.max_tokens() : kDefaultMaxTokens;
  for (const ChoiceSeen& c : choices) {
    TANDEM_FUZZ_ASSERT(c.finals == 1 && !c.delta_after_final, "%d final messages for %s", c.finals,
                       request.c_str());
    TANDEM_FUZZ_ASSERT(static_cast<int32_t>(c.ids.size()) <= max_tokens, "%zu ids for %s",
                       c.ids.size(), request.c_str());
    for (int32_t id : c.ids) {
      TANDEM_FUZZ_ASSERT(id >= 0 && id < kVocab, "id %d for %s", id, request.c_str());
    }
  }
}

// Sessions are freed as the stream closes; allow the workers a moment.
void ExpectNoSessionsLeft(Stack& stack) {
  for (int i = 0; i < 200; ++i) {
    if (stack.coordinator->active_sessions() == 0 && stack.target.engine->active_sessions() == 0 &&
        stack.draft.engine->active_sessions() == 0) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  TANDEM_FUZZ_ASSERT(false, "sessions left: coordinator %d, target %d, draft %d",
                     stack.coordinator->active_sessions(),
                     static_cast<int>(stack.target.engine->active_sessions()),
                     static_cast<int>(stack.draft.engine->active_sessions()));
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tandem::TheStack();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  Stack& stack = TheStack();
  FuzzReader in(data, size);
  absl::flat_hash_set<std::string> named;
  for (int calls = 1 + in.Byte() % 4; calls > 0 && !in.empty(); --calls) {
    if (in.Byte() % 8 == 0) {
      const absl::Status closed =
          stack.coordinator->CloseSession(in.Choose<const char*>({"a", "b", "c", "", "zz"}));
      TANDEM_FUZZ_ASSERT(closed.ok() || closed.code() == absl::StatusCode::kNotFound,
                         "CloseSession gave %s", closed.ToString().c_str());
      continue;
    }
    const v1::GenerateRequest request = ReadRequest(in);
    if (!request.session_id().empty()) named.insert(request.session_id());
    RunGenerate(*stack.coordinator, request);
  }
  for (const std::string& id : named) stack.coordinator->CloseSession(id).IgnoreError();
  ExpectNoSessionsLeft(stack);
  return 0;
}
