#include "services/coordinator/reply_writer.h"

#include <algorithm>
#include <utility>

#include "services/coordinator/delta_logprobs.h"

namespace tandem {
namespace {

double Seconds(ReplyWriter::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

ReplyWriter::ReplyWriter(Options options, const Write& write,
                         const std::function<bool()>& cancelled, CoordinatorMetrics* metrics)
    : token_bytes_(*options.token_bytes),
      logprobs_(options.logprobs),
      start_(options.start),
      write_(write),
      cancelled_(cancelled),
      metrics_(metrics),
      text_(options.parsing.active() && options.parse_token_bytes != nullptr
                ? options.parse_token_bytes
                : options.token_bytes,
            std::move(options.stop_strings)),
      last_token_(options.start) {
  if (options.parsing.active()) parser_.emplace(options.parsing);
}

void ReplyWriter::AddText(const std::string& text, v1::TokenDelta* delta) {
  if (parser_.has_value()) {
    parser_->Feed(text, delta);
  } else {
    *delta->mutable_text() += text;
  }
}

bool ReplyWriter::Tokens(std::vector<int32_t>& tokens) {
  v1::GenerateResponse delta;
  size_t used = 0;
  while (used < tokens.size() && !text_.stopped()) {
    if (logprobs_) {  // the round loop checked there is one per token
      AppendLogprobs(verdict_->logprobs(static_cast<int>(used)), token_bytes_,
                     delta.mutable_delta());
    }
    delta.mutable_delta()->add_token_ids(tokens[used]);
    AddText(text_.Add(tokens[used++]), delta.mutable_delta());
  }
  tokens.resize(used);  // a round's tokens after a stop string are dropped
  ObserveTokens(tokens.size());
  if (cancelled_() || !write_(delta)) {
    client_gone_ = true;
    return false;
  }
  return !text_.stopped();
}

void ReplyWriter::ObserveTokens(size_t count) {
  const Clock::time_point now = Clock::now();
  if (first_token_ < 0) {
    first_token_ = Seconds(now - start_);
    metrics_->time_to_first_token.Observe(first_token_);
  } else {
    const double gap = Seconds(now - last_token_);
    for (size_t i = 0; i < count; ++i) metrics_->inter_token_latency.Observe(gap / count);
  }
  last_token_ = now;
  metrics_->generated_tokens.Increment(static_cast<double>(count));
}

void ReplyWriter::Finish(const RoundOutcome& outcome, const std::string& session_id,
                         uint64_t seed) {
  v1::GenerateResponse delta;
  AddText(text_.Flush(), delta.mutable_delta());
  if (parser_.has_value()) parser_->Finish(delta.mutable_delta());
  const v1::TokenDelta& rest = delta.delta();
  if (!rest.text().empty() || !rest.reasoning_text().empty() || rest.tool_calls_size() > 0) {
    write_(delta);
  }
  v1::GenerateResponse final = Final(outcome, session_id, seed);
  if (parser_.has_value()) {
    for (const v1::ToolCall& call : parser_->calls()) *final.mutable_final()->add_tool_calls() = call;
  }
  CountOutcome(outcome);
  write_(final);
}

v1::GenerateResponse ReplyWriter::Final(const RoundOutcome& outcome, const std::string& session_id,
                                        uint64_t seed) const {
  v1::GenerateResponse final;
  v1::GenerationResult* r = final.mutable_final();
  r->set_finish_reason(outcome.finish_reason);
  r->mutable_usage()->set_prompt_tokens(outcome.prompt_tokens);
  r->mutable_usage()->set_cached_prompt_tokens(outcome.cached_prompt_tokens);
  r->mutable_usage()->set_generated_tokens(outcome.generated);
  const v1::SpeculationStats& s = outcome.speculation;
  r->mutable_usage()->set_accepted_prediction_tokens(s.predicted_accepted_tokens());
  r->mutable_usage()->set_rejected_prediction_tokens(s.predicted_tokens() -
                                                     s.predicted_accepted_tokens());
  const double total = Seconds(Clock::now() - start_);
  const double first_token = std::max(0.0, first_token_);
  r->mutable_timing()->set_prefill_seconds(outcome.prefill_seconds);
  r->mutable_timing()->set_time_to_first_token_seconds(first_token);
  r->mutable_timing()->set_total_seconds(total);
  const double decode = std::max(0.0, total - first_token);
  r->mutable_timing()->set_decode_seconds(decode);
  if (decode > 0 && outcome.generated > 1) {
    r->mutable_timing()->set_decode_tokens_per_second((outcome.generated - 1) / decode);
  }
  *r->mutable_speculation() = outcome.speculation;
  r->set_session_id(session_id);
  r->set_seed(seed);
  return final;
}

void ReplyWriter::CountOutcome(const RoundOutcome& outcome) {
  metrics_->prompt_tokens.Increment(outcome.prompt_tokens);
  metrics_->cached_prompt_tokens.Increment(outcome.cached_prompt_tokens);
  const v1::SpeculationStats& st = outcome.speculation;
  metrics_->drafts.Increment(st.rounds());
  metrics_->draft_tokens.Increment(st.drafted_tokens());
  metrics_->accepted_tokens.Increment(st.accepted_tokens());
  metrics_->forced_tokens.Increment(st.forced_tokens());
  metrics_->prediction_accepted_tokens.Increment(st.predicted_accepted_tokens());
  metrics_->prediction_rejected_tokens.Increment(st.predicted_tokens() -
                                                 st.predicted_accepted_tokens());
  for (int i = 0; i < st.accepted_per_position_size(); ++i) {
    if (st.accepted_per_position(i) > 0) {
      metrics_->AcceptedAtPosition(i).Increment(st.accepted_per_position(i));
    }
  }
}

}  // namespace tandem
