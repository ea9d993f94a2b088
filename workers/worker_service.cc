#include "workers/worker_service.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/utf8_repair.h"
#include "core/grammar/constraint_spec.h"
#include "core/kernels/matmul.h"
#include "core/kernels/vector_ops.h"
#include "core/tokenizer/special_tokens.h"
#include "glog/logging.h"
#include "wire/grpc_status.h"
#include "wire/prompt_tokenization.h"
#include "wire/proto_convert.h"
#include "wire/tokenizer_wire.h"
#include "wire/worker_error.h"

namespace tandem {
namespace {

grpc::Status Unavailable() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker is loading its model");
}

}  // namespace

WorkerService::WorkerService(WorkerMetrics* metrics, absl::Duration idle_timeout,
                             absl::Duration open_timeout)
    : metrics_(metrics), idle_timeout_(idle_timeout), open_timeout_(open_timeout) {
  if (idle_timeout_ > absl::ZeroDuration() || open_timeout_ > absl::ZeroDuration()) {
    watchdog_ = std::thread([this] { WatchIdleStreams(); });
  }
}

WorkerService::~WorkerService() {
  {
    absl::MutexLock lock(&idle_mutex_);
    stopping_ = true;
  }
  if (watchdog_.joinable()) watchdog_.join();
}

void WorkerService::Touch(grpc::ServerContext* context) {
  absl::MutexLock lock(&idle_mutex_);
  deadline_[context] =
      idle_timeout_ > absl::ZeroDuration() ? absl::Now() + idle_timeout_ : absl::InfiniteFuture();
}

void WorkerService::AwaitOpen(grpc::ServerContext* context) {
  absl::MutexLock lock(&idle_mutex_);
  deadline_[context] =
      open_timeout_ > absl::ZeroDuration() ? absl::Now() + open_timeout_ : absl::InfiniteFuture();
}

bool WorkerService::Forget(grpc::ServerContext* context) {
  absl::MutexLock lock(&idle_mutex_);
  return deadline_.erase(context) > 0;
}

void WorkerService::WatchIdleStreams() {
  absl::Duration tick = absl::Seconds(1);
  for (absl::Duration timeout : {idle_timeout_, open_timeout_}) {
    if (timeout > absl::ZeroDuration()) tick = std::min(tick, timeout / 4);
  }
  absl::MutexLock lock(&idle_mutex_);
  while (!idle_mutex_.AwaitWithTimeout(absl::Condition(&stopping_), tick)) {
    const absl::Time now = absl::Now();
    for (auto it = deadline_.begin(); it != deadline_.end();) {
      if (now > it->second) {
        it->first->TryCancel();  // the handler's Read fails and the session is freed
        deadline_.erase(it++);
      } else {
        ++it;
      }
    }
  }
}

void WorkerService::Register(int64_t session, grpc::ServerContext* context) {
  absl::MutexLock lock(&idle_mutex_);
  streams_[session] = context;
}

void WorkerService::Unregister(int64_t session) {
  absl::MutexLock lock(&idle_mutex_);
  streams_.erase(session);
}

void WorkerService::CancelEvicted(const std::vector<int64_t>& sessions) {
  absl::MutexLock lock(&idle_mutex_);
  for (int64_t session : sessions) {
    auto it = streams_.find(session);
    if (it != streams_.end()) it->second->TryCancel();  // its handler frees the rest
  }
}

void FillModelInfo(const WorkerEngine& engine, v1::ModelInfo* info) {
  const Model& model = engine.model();
  const Tokenizer& tok = engine.tokenizer();
  const Vocabulary& vocab = tok.vocabulary();
  // Proto3 strings must be UTF-8 or the coordinator cannot parse the answer at all; a model
  // file's text (GGUF strings, the path) is not checked for it, so it is repaired here.
  info->set_name(utf8::ReplaceInvalid(model.config().name));
  info->set_architecture(utf8::ReplaceInvalid(model.config().architecture));
  info->set_path(utf8::ReplaceInvalid(model.path()));
  info->set_vocab_size(tok.vocab_size());
  info->set_vocabulary_fingerprint(tok.fingerprint());
  info->set_tokenizer_fingerprint(engine.tokenizer_fingerprint());
  info->set_context_size(static_cast<int32_t>(engine.context_size()));
  info->set_parameter_count(model.parameter_count());
  info->set_weight_type(model.weight_type());
  info->set_kv_type(std::string(KvTypeName(engine.options().kv_type)));
  info->set_activations(std::string(ActivationPrecisionName(model.activations())));
  v1::SpecialTokens* special = info->mutable_special_tokens();
  special->set_bos_id(vocab.bos_id.value_or(-1));
  special->set_eos_id(vocab.eos_id.value_or(-1));
  special->set_unk_id(vocab.unk_id.value_or(-1));
  special->set_pad_id(vocab.pad_id.value_or(-1));
  special->set_add_bos(vocab.add_bos);
  special->set_add_eos(vocab.add_eos);
  for (int32_t id : EndOfTurnIds(tok)) special->add_end_of_turn_ids(id);
  if (engine.chat_template().has_value()) {
    info->set_chat_template(utf8::ReplaceInvalid(*engine.chat_template()));
  }
}

grpc::Status WorkerService::Describe(grpc::ServerContext*, const v1::DescribeRequest* request,
                                     v1::DescribeResponse* response) {
  WorkerEngine* engine = engine_.load();
  if (engine == nullptr) return Unavailable();
  FillModelInfo(*engine, response->mutable_model());
  response->set_role(engine->options().role == WorkerRole::kDraft ? v1::WORKER_ROLE_DRAFT
                                                                  : v1::WORKER_ROLE_TARGET);
  response->set_version("0.1.0");
  response->set_max_sessions(engine->options().max_sessions);
  response->set_active_sessions(engine->active_sessions());
  response->set_queue_depth(static_cast<int32_t>(engine->queue_depth()));
  const WorkerEngine::KvCapacity kv = engine->kv_capacity();
  response->set_kv_blocks_in_use(engine->kv_blocks().used);
  if (kv.global_blocks > 0) {
    v1::KvCapacity* capacity = response->mutable_kv_capacity();
    capacity->set_block_positions(static_cast<int32_t>(kKeyBlock));
    capacity->set_global_blocks(kv.global_blocks);
    capacity->set_sliding_blocks(kv.sliding_blocks);
    capacity->set_ring_blocks(kv.ring_blocks);
  }
  if (request->include_vocabulary()) {
    const Tokenizer& tok = engine->tokenizer();
    v1::Vocabulary* vocab = response->mutable_vocabulary();
    vocab->set_model(std::string(TextEncodingName(tok.vocabulary().encoding)));
    vocab->set_strip_leading_space(tok.adds_leading_space());
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      vocab->add_token_bytes(std::string(tok.Piece(id, /*render_special=*/false)));
      vocab->add_token_types(static_cast<int32_t>(tok.vocabulary().types[id]));
    }
  }
  if (request->include_tokenizer()) {
    TokenizerToProto(engine->tokenizer().vocabulary(), engine->chat_template(),
                     response->mutable_tokenizer());
  }
  return grpc::Status::OK;
}

grpc::Status WorkerService::Tokenize(grpc::ServerContext*, const v1::TokenizeRequest* request,
                                     v1::TokenizeResponse* response) {
  WorkerEngine* engine = engine_.load();
  if (engine == nullptr) return Unavailable();
  absl::StatusOr<v1::TokenizeResponse> result =
      TokenizePrompt(engine->tokenizer(), engine->chat_template(), *request);
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

void WorkerService::UpdateGauges(const WorkerEngine& engine) {
  metrics_->active_sessions.Set(engine.active_sessions());
  metrics_->kv_cache_bytes.Set(static_cast<double>(engine.kv_bytes_in_use()));
  const KvBlockPool::Stats blocks = engine.kv_blocks();
  metrics_->KvBlocks("used").Set(static_cast<double>(blocks.used));
  metrics_->KvBlocks("shared").Set(static_cast<double>(blocks.shared));
  metrics_->KvBlocks("cached").Set(static_cast<double>(blocks.cached));
  // Without a KV budget the pool has no bound (free < 0): no "free" series rather than -1.
  if (blocks.free >= 0) metrics_->KvBlocks("free").Set(static_cast<double>(blocks.free));
}

grpc::Status WorkerService::Attach(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream) {
  WorkerEngine* engine = engine_.load();
  if (engine == nullptr) return Unavailable();
  v1::SessionRequest request;
  AwaitOpen(context);  // a stream that never sends `open` must not hold a thread forever
  const bool read = stream->Read(&request);
  if (!Forget(context)) {  // the watchdog cancelled it: the client sees CANCELLED
    return grpc::Status(
        grpc::StatusCode::CANCELLED,
        absl::StrCat("attach: no `open` within ", absl::FormatDuration(open_timeout_),
                     " of the stream's start"));
  }
  if (!read) return grpc::Status::OK;
  if (request.request_case() != v1::SessionRequest::kOpen) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "attach: the first request of a stream must be `open`");
  }
  std::vector<int64_t> evicted;
  absl::StatusOr<int64_t> session = engine->OpenSession(request.open().context_size(), &evicted);
  CancelEvicted(evicted);
  metrics_->evicted_sessions.Increment(static_cast<double>(evicted.size()));
  if (!session.ok()) {
    LOG(WARNING) << "attach refused: " << session.status();
    metrics_->Errors("open").Increment();
    return ToGrpcStatus(session.status());
  }
  Register(*session, context);
  UpdateGauges(*engine);
  // The session lives exactly as long as this stream.
  struct Closer {
    WorkerEngine* engine;
    int64_t session;
    WorkerService* service;
    grpc::ServerContext* context;
    ~Closer() {
      service->Forget(context);
      service->Unregister(session);
      engine->CloseSession(session);
      service->UpdateGauges(*engine);
    }
  } closer{engine, *session, this, context};
  VLOG(1) << "session " << request.open().session_id() << " attached as " << *session;
  Touch(context);

  v1::SessionResponse response;
  response.set_request_id(request.request_id());
  response.mutable_opened()->set_cached_tokens(0);
  if (!stream->Write(response)) return grpc::Status::OK;
  while (!context->IsCancelled() && stream->Read(&request)) {
    Touch(context);
    response.Clear();
    response.set_request_id(request.request_id());
    if (request.request_case() == v1::SessionRequest::kClose) {
      response.mutable_closed();
      stream->Write(response);
      break;
    }
    Serve(*engine, *session, request, &response);
    Touch(context);  // idle time counts from the answer
    if (!stream->Write(response)) break;
  }
  return grpc::Status::OK;
}

void WorkerService::Serve(WorkerEngine& engine, int64_t session, const v1::SessionRequest& request,
                          v1::SessionResponse* response) {
  WorkTiming timing;
  std::string kind;
  absl::Status status;
  switch (request.request_case()) {
    case v1::SessionRequest::kSync: {
      kind = "sync";
      const v1::SyncRequest& sync = request.sync();
      int64_t reused = 0;
      absl::StatusOr<int64_t> cached =
          engine.Sync(session, sync.position(), sync.tokens(), &timing, &reused);
      status = cached.status();
      if (cached.ok()) {
        response->mutable_sync()->set_cached_tokens(static_cast<int32_t>(*cached));
        response->mutable_sync()->set_reused_tokens(static_cast<int32_t>(reused));
      }
      metrics_->batch_size.Observe(sync.tokens_size());
      break;
    }
    case v1::SessionRequest::kDraft: {
      kind = "draft";
      const v1::DraftRequest& draft = request.draft();
      SamplerConfig sampler = SamplerConfigFromProto(draft.sampling());
      sampler.output_start = draft.output_start();  // Sampler::Create refuses a negative one
      absl::StatusOr<DraftOutput> out = engine.Draft(session, draft.position(), draft.tokens(),
                                                     draft.num_tokens(), sampler, &timing);
      status = out.status();
      if (out.ok()) {
        v1::DraftResult* result = response->mutable_draft();
        for (size_t i = 0; i < out->guesses.size(); ++i) {
          v1::DraftToken* guess = result->add_guesses();
          guess->set_token_id(out->guesses[i]);
          if (!out->q[i].ids.empty()) SparseToProto(out->q[i], guess->mutable_distribution());
        }
      }
      break;
    }
    case v1::SessionRequest::kVerify: {
      kind = "verify";
      const v1::VerifyRequest& verify = request.verify();
      std::vector<int32_t> guesses;
      std::vector<SparseDistribution> q;
      for (const v1::DraftToken& g : verify.guesses()) {
        guesses.push_back(g.token_id());
        q.push_back(SparseFromProto(g.distribution()));
      }
      metrics_->batch_size.Observe(1 + verify.guesses_size());
      VerifyLogprobs logprobs{verify.logprobs(), verify.top_logprobs(), {}};
      std::vector<int32_t> continued;
      SamplerConfig sampler = SamplerConfigFromProto(verify.sampling());
      sampler.output_start = verify.output_start();
      absl::StatusOr<AcceptanceResult> out = engine.Verify(
          session, verify.position(), verify.tokens(), verify.pending_token(), std::move(guesses),
          q, sampler, &timing, &logprobs, verify.continue_tokens(), &continued);
      status = out.status();
      if (out.ok()) {
        v1::VerifyResult* result = response->mutable_verify();
        result->set_accepted_count(out->accepted);
        result->set_next_token(out->next_token);
        result->mutable_guess_probabilities()->Assign(out->guess_probabilities.begin(),
                                                      out->guess_probabilities.end());
        for (const TokenLogprobs& l : logprobs.out) TokenLogprobsToProto(l, result->add_logprobs());
        result->mutable_continued_tokens()->Assign(continued.begin(), continued.end());
        metrics_->continued_tokens.Increment(static_cast<double>(continued.size()));
      }
      break;
    }
    case v1::SessionRequest::kConstrain: {
      kind = "constrain";
      const v1::ConstrainRequest& constrain = request.constrain();
      const ConstraintSpec spec = ConstraintFromProto(constrain.constraint());
      const auto start = std::chrono::steady_clock::now();
      status = engine.Constrain(session, spec, constrain.start_position(), constrain.end_ids());
      timing.compute_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (status.ok()) response->mutable_constrained();
      VLOG(1) << "session " << session << ": constraint " << ConstraintKindName(spec.kind)
              << " from position " << constrain.start_position();
      break;
    }
    default:
      kind = "other";
      status = absl::InvalidArgumentError(
          "attach: expected sync, constrain, draft, verify or close after open");
  }
  response->set_compute_seconds(timing.compute_seconds);
  response->set_queue_seconds(timing.queue_seconds);
  metrics_->ComputeSeconds(kind).Observe(timing.compute_seconds);
  metrics_->queue_wait_seconds.Observe(timing.queue_seconds);
  UpdateGauges(engine);
  VLOG(2) << "session " << session << ": " << kind << " took " << timing.compute_seconds << " s";
  if (!status.ok()) {
    LOG(WARNING) << "session " << session << ": " << kind << " failed: " << status;
    metrics_->Errors(kind).Increment();
    SetRequestError(status, response->mutable_error());  // the session lives on
  }
}

}  // namespace tandem
