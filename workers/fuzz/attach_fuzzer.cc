// libFuzzer target for the worker's request handling: each input decodes into up to two Attach
// streams, each to an in-process target (stories260K) or draft (the distilled draft) worker,
// carrying up to eight SessionRequests: open, sync, constrain, draft, verify, close or nothing,
// with any positions, token ids, counts, sampling settings (NaN, infinities, extremes), draft
// distributions (unsorted, mismatched, non-finite, mass far from 1) and constraints (valid,
// broken or fuzz-bytes grammars and regexes, JSON Schemas, any start and end ids).
// Properties: each response echoes its request_id; a RequestError carries a code the worker
// uses for bad requests (INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED, FAILED_PRECONDITION,
// OUT_OF_RANGE); a sampling verify refuses a draft q that cannot be right (the guess outside
// its support, mass far from 1); results are in range (ids in the vocabulary, draft
// distributions finite and normalised, accepted_count within the guesses, cached_tokens
// within the context); a constrain is answered by `constrained` or a RequestError (also
// UNIMPLEMENTED for a kind whose front end has not landed), and once constrained to digits
// every guess and next token drawn from the start on is a digit token or an end id; a stream
// ends OK or INVALID_ARGUMENT (first request not `open`) or RESOURCE_EXHAUSTED; after the
// streams close, no session is left on either worker.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/base/fuzz_assert.h"
#include "core/base/fuzz_reader.h"
#include "grpcpp/client_context.h"
#include "tandem/v1/worker.grpc.pb.h"
#include "workers/fuzz/fuzz_requests.h"
#include "workers/fuzz/in_process_worker.h"

namespace tandem {
namespace {

using fuzzing::FuzzReader;
using fuzzing::ReadSampling;
using fuzzing::ReadTokenId;

constexpr int kContext = 64;
constexpr int32_t kVocab = 512;

struct Workers {
  Workers()
      : target(WorkerRole::kTarget, "models/stories260K/stories260K.gguf", kContext, 4),
        draft(WorkerRole::kDraft, "models/stories260K/derived/stories-draft-distilled.gguf",
              kContext, 4),
        target_stub(v1::Worker::NewStub(target.Channel())),
        draft_stub(v1::Worker::NewStub(draft.Channel())) {}
  fuzzing::InProcessWorker target, draft;
  std::unique_ptr<v1::Worker::Stub> target_stub, draft_stub;
};

Workers& TheWorkers() {
  static Workers* workers = new Workers();  // never destroyed: gRPC threads outlive main()
  return *workers;
}

void ReadTokens(FuzzReader& in, google::protobuf::RepeatedField<int32_t>* tokens) {
  for (int n = in.Byte() % 10; n > 0; --n) tokens->Add(ReadTokenId(in));
}

void ReadGuess(FuzzReader& in, v1::DraftToken* guess) {
  guess->set_token_id(ReadTokenId(in));
  v1::SparseDistribution* q = guess->mutable_distribution();
  const uint8_t shape = in.Byte();
  if (shape % 4 == 0) {  // one-hot on the guess, as a greedy draft sends
    q->add_token_ids(guess->token_id());
    q->add_probabilities(1.0f);
    return;
  }
  for (int n = shape % 6; n > 0; --n) {
    q->add_token_ids(ReadTokenId(in));
    q->add_probabilities(in.Float());
  }
  if (shape & 0x80) q->add_probabilities(0.5f);  // one probability too many
}

// Often `cached`, where the session's tokens end (a request that adds to them).
int32_t Position(FuzzReader& in, int32_t cached) {
  return in.Pick<int32_t>(
      {cached, cached, 0, 0, 1, 2, 4, 8, -1, kContext - 1, kContext, INT32_MAX});
}

// The first request of a stream is usually `open` (the only valid start). `cached`: the
// tokens the session last held, for constraints that start where a verify's next token goes.
v1::SessionRequest ReadRequest(FuzzReader& in, uint64_t request_id, bool first, int32_t cached) {
  v1::SessionRequest r;
  r.set_request_id(request_id);
  const uint8_t kind = in.Byte();
  switch (first && kind % 16 != 15 ? 0 : kind % 10) {
    case 0:
      r.mutable_open()->set_session_id(std::string(in.Byte() % 4, 's'));
      r.mutable_open()->set_context_size(
          in.Pick<int32_t>({0, 16, kContext, kContext + 1, -1, INT32_MAX, 1}));
      break;
    case 1:
    case 2:
      r.mutable_sync()->set_position(Position(in, cached));
      ReadTokens(in, r.mutable_sync()->mutable_tokens());
      break;
    case 3:
    case 4: {
      v1::DraftRequest* d = r.mutable_draft();
      d->set_position(Position(in, cached));
      ReadTokens(in, d->mutable_tokens());
      d->set_num_tokens(in.Pick<int32_t>({1, 2, 4, 0, -1, 64, 65, INT32_MAX}));
      if (in.Bool()) {
        ReadSampling(in, d->mutable_sampling());
        d->set_output_start(in.Pick<int32_t>({0, cached, cached + 1, -1, INT32_MAX}));  // #30
      }
      break;
    }
    case 5:
    case 6: {
      v1::VerifyRequest* v = r.mutable_verify();
      v->set_position(Position(in, cached));
      ReadTokens(in, v->mutable_tokens());
      v->set_pending_token(ReadTokenId(in));
      for (int n = in.Byte() % 5; n > 0; --n) ReadGuess(in, v->add_guesses());
      if (in.Bool()) {
        ReadSampling(in, v->mutable_sampling());
        v->set_output_start(in.Pick<int32_t>({0, cached, cached + 1, -1, INT32_MAX}));  // #30
      }
      break;
    }
    case 7:
    case 8: {
      v1::ConstrainRequest* c = r.mutable_constrain();
      fuzzing::ReadConstraint(in, c->mutable_constraint());
      // Usually right after a pending token at `cached`: the next verify's token is checked.
      c->set_start_position(in.Pick<int32_t>({cached + 1, cached + 1, cached, 0, -1, kContext}));
      for (int n = in.Byte() % 3; n > 0; --n) c->add_end_ids(ReadTokenId(in));
      break;
    }
    default:
      if (in.Bool()) r.mutable_close();
      break;  // else: no request at all
  }
  return r;
}

// A constraint kind whose front end has not landed yet is UNIMPLEMENTED (constraint_grammar.h).
bool RequestErrorCode(int code, bool constrain) {
  using C = absl::StatusCode;
  for (C allowed : {C::kInvalidArgument, C::kNotFound, C::kResourceExhausted,
                    C::kFailedPrecondition, C::kOutOfRange}) {
    if (code == static_cast<int>(allowed)) return true;
  }
  return constrain && code == static_cast<int>(C::kUnimplemented);
}

// What the stream's last answered constrain set: kDigitsGrammar from `start` with `end_ids`.
struct DigitsConstraint {
  bool set = false;
  int64_t start = 0;
  std::vector<int32_t> end_ids;

  void Update(const v1::SessionRequest& r, const v1::SessionResponse& response) {
    if (!r.has_constrain()) return;
    if (response.has_error()) {  // a failed constrain leaves none
      set = false;
      return;
    }
    set = r.constrain().constraint().grammar() == fuzzing::kDigitsGrammar;
    start = r.constrain().start_position();
    end_ids.assign(r.constrain().end_ids().begin(), r.constrain().end_ids().end());
  }
  // Whether `token`, drawn at absolute `position`, is one the constraint allows somewhere.
  bool Allows(const Tokenizer& tokenizer, int64_t position, int32_t token) const {
    if (!set || position < start) return true;
    if (std::find(end_ids.begin(), end_ids.end(), token) != end_ids.end()) return true;
    absl::StatusOr<absl::string_view> bytes = tokenizer.TokenBytes(token);
    if (!bytes.ok() || bytes->empty()) return false;
    return std::all_of(bytes->begin(), bytes->end(), [](char c) { return c >= '0' && c <= '9'; });
  }
};

void CheckDistribution(const v1::SparseDistribution& q, const std::string& request) {
  TANDEM_FUZZ_ASSERT(q.token_ids_size() == q.probabilities_size() && q.token_ids_size() > 0,
                     "draft q with %d ids and %d probabilities for %s", q.token_ids_size(),
                     q.probabilities_size(), request.c_str());
  double sum = 0;
  for (int i = 0; i < q.token_ids_size(); ++i) {
    TANDEM_FUZZ_ASSERT(q.token_ids(i) >= 0 && q.token_ids(i) < kVocab &&
                           (i == 0 || q.token_ids(i) > q.token_ids(i - 1)),
                       "draft q id %d for %s", q.token_ids(i), request.c_str());
    TANDEM_FUZZ_ASSERT(std::isfinite(q.probabilities(i)) && q.probabilities(i) >= 0,
                       "draft q probability %g for %s", q.probabilities(i), request.c_str());
    sum += q.probabilities(i);
  }
  TANDEM_FUZZ_ASSERT(std::fabs(sum - 1) < 1e-3, "draft q sums to %g for %s", sum, request.c_str());
}

// Whether q is plainly not a distribution `guess` was drawn from: the guess outside its
// support, or its mass far from 1 (the worker's tolerance is narrower than this).
bool PlainlyBadDraft(const v1::DraftToken& g) {
  const v1::SparseDistribution& q = g.distribution();
  bool has_guess = false;
  double mass = 0;
  for (int i = 0; i < q.token_ids_size() && i < q.probabilities_size(); ++i) {
    has_guess = has_guess || (q.token_ids(i) == g.token_id() && q.probabilities(i) > 0);
    mass += q.probabilities(i);
  }
  return !has_guess || !(mass > 0.5 && mass < 2);
}

// Issue #10 item 4: when sampling (temperature > 0), a verify must not accept against a draft
// distribution that cannot be right; a guess is tested if it was accepted or is the first
// rejected one.
void CheckVerifyRefusedBadDraft(const v1::SessionRequest& r, const v1::VerifyResult& v,
                                const std::string& request) {
  const v1::VerifyRequest& verify = r.verify();
  if (!verify.sampling().has_temperature() || !(verify.sampling().temperature() > 0)) return;
  const int tested = std::min(v.accepted_count() + 1, verify.guesses_size());
  for (int i = 0; i < tested; ++i) {
    TANDEM_FUZZ_ASSERT(!PlainlyBadDraft(verify.guesses(i)),
                       "verify accepted %d guesses against the bad draft q of guess %d for %s",
                       v.accepted_count(), i, request.c_str());
  }
}

// Constrained by kDigitsGrammar, every token drawn after the start is a digit token or an
// end id: the guesses of a draft and the next token of a verify.
void CheckConstrained(const v1::SessionRequest& r, const v1::SessionResponse& response,
                      const DigitsConstraint& digits, const Tokenizer& tokenizer,
                      const std::string& request) {
  if (response.has_draft()) {
    const int64_t first = int64_t{r.draft().position()} + r.draft().tokens_size();
    for (int i = 0; i < response.draft().guesses_size(); ++i) {
      const int32_t guess = response.draft().guesses(i).token_id();
      TANDEM_FUZZ_ASSERT(digits.Allows(tokenizer, first + i, guess),
                         "guess %d (id %d) breaks the digits constraint for %s", i, guess,
                         request.c_str());
    }
  }
  if (response.has_verify()) {
    const v1::VerifyResult& v = response.verify();
    const int64_t at =
        int64_t{r.verify().position()} + r.verify().tokens_size() + 1 + v.accepted_count();
    TANDEM_FUZZ_ASSERT(digits.Allows(tokenizer, at, v.next_token()),
                       "next_token %d at %lld breaks the digits constraint for %s", v.next_token(),
                       static_cast<long long>(at), request.c_str());
  }
}

std::string ShortRequest(const v1::SessionRequest& r) {
  std::string request = r.ShortDebugString();
  if (request.size() > 1500) request = request.substr(0, 1500) + "...";
  return request;
}

void CheckResponse(const v1::SessionRequest& r, const v1::SessionResponse& response) {
  const std::string request = ShortRequest(r);
  TANDEM_FUZZ_ASSERT(response.request_id() == r.request_id(), "request_id %llu for %s",
                     static_cast<unsigned long long>(response.request_id()), request.c_str());
  if (response.has_error()) {
    TANDEM_FUZZ_ASSERT(RequestErrorCode(response.error().code(), r.has_constrain()),
                       "RequestError %d (%s) for %s", response.error().code(),
                       response.error().message().c_str(), request.c_str());
    return;
  }
  TANDEM_FUZZ_ASSERT(!r.has_constrain() || response.has_constrained(),
                     "constrain answered without `constrained` for %s", request.c_str());
  if (response.has_sync()) {
    TANDEM_FUZZ_ASSERT(
        response.sync().cached_tokens() >= 0 && response.sync().cached_tokens() <= kContext,
        "cached_tokens %d for %s", response.sync().cached_tokens(), request.c_str());
  }
  for (const v1::DraftToken& g : response.draft().guesses()) {
    TANDEM_FUZZ_ASSERT(g.token_id() >= 0 && g.token_id() < kVocab, "guess %d for %s", g.token_id(),
                       request.c_str());
    CheckDistribution(g.distribution(), request);
  }
  if (response.has_verify()) {
    const v1::VerifyResult& v = response.verify();
    CheckVerifyRefusedBadDraft(r, v, request);
    TANDEM_FUZZ_ASSERT(v.accepted_count() >= 0 && v.accepted_count() <= r.verify().guesses_size(),
                       "accepted_count %d for %s", v.accepted_count(), request.c_str());
    TANDEM_FUZZ_ASSERT(v.next_token() >= 0 && v.next_token() < kVocab, "next_token %d for %s",
                       v.next_token(), request.c_str());
  }
}

void RunStream(v1::Worker::Stub& stub, const Tokenizer& tokenizer, FuzzReader& in) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = stub.Attach(&context);
  uint64_t request_id = in.Byte();
  const int requests = 1 + in.Byte() % 8;
  DigitsConstraint digits;
  int32_t cached = 0;
  for (int i = 0; i < requests; ++i) {
    request_id += in.Byte() % 3;  // increasing, repeated, or skipping
    const v1::SessionRequest request = ReadRequest(in, request_id, i == 0, cached);
    if (!stream->Write(request)) break;
    v1::SessionResponse response;
    if (!stream->Read(&response)) break;
    CheckResponse(request, response);
    CheckConstrained(request, response, digits, tokenizer, ShortRequest(request));
    digits.Update(request, response);
    if (response.has_sync()) cached = response.sync().cached_tokens();
    if (response.has_verify()) {
      cached = request.verify().position() + request.verify().tokens_size() + 1 +
               response.verify().accepted_count();
    }
    if (request.has_close()) break;
  }
  stream->WritesDone();
  v1::SessionResponse rest;
  while (stream->Read(&rest)) {
  }
  const grpc::Status status = stream->Finish();
  TANDEM_FUZZ_ASSERT(status.ok() || status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
                         status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED,
                     "Attach ended with %d: %s", static_cast<int>(status.error_code()),
                     status.error_message().c_str());
}

void ExpectNoSessionsLeft(Workers& workers) {
  for (int i = 0; i < 200; ++i) {
    if (workers.target.engine->active_sessions() == 0 &&
        workers.draft.engine->active_sessions() == 0) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  TANDEM_FUZZ_ASSERT(false, "sessions left: target %d, draft %d",
                     static_cast<int>(workers.target.engine->active_sessions()),
                     static_cast<int>(workers.draft.engine->active_sessions()));
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tandem::TheWorkers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  Workers& workers = TheWorkers();
  FuzzReader in(data, size);
  for (int streams = 1 + in.Byte() % 2; streams > 0 && !in.empty(); --streams) {
    const bool draft = in.Bool();
    RunStream(draft ? *workers.draft_stub : *workers.target_stub,
              (draft ? workers.draft : workers.target).engine->tokenizer(), in);
  }
  ExpectNoSessionsLeft(workers);
  return 0;
}
