// Every Prometheus metric Tandem exports, declared in this one file. Prefix `tandem_`, base
// units, `_total` on counters, low-cardinality labels (role, kind, outcome, position).
//
// Thread-safe (prometheus-cpp metrics are).
#ifndef TANDEM_WIRE_METRICS_H_
#define TANDEM_WIRE_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace tandem {

// A worker's metrics; `role` ("draft" / "target") labels every series.
struct WorkerMetrics {
  WorkerMetrics(prometheus::Registry& registry, const std::string& role);

  // Seconds of model compute per request, by kind ("sync", "draft", "verify").
  prometheus::Histogram& ComputeSeconds(const std::string& kind);
  // Requests answered with an error, by kind.
  prometheus::Counter& Errors(const std::string& kind);

  prometheus::Family<prometheus::Histogram>& compute_seconds;
  prometheus::Family<prometheus::Histogram>& batch_tokens;
  prometheus::Family<prometheus::Counter>& errors;
  prometheus::Gauge& active_sessions;
  prometheus::Counter& evicted_sessions;  // idle sessions evicted to make room for new ones
  prometheus::Gauge& kv_cache_bytes;
  prometheus::Gauge& kv_cache_capacity_bytes;
  prometheus::Histogram& batch_size;  // tokens per forward pass of a request
  // The batch scheduler's steps (workers/batch_scheduler.h).
  prometheus::Family<prometheus::Histogram>& step_rows;      // rows per step, by kind
  prometheus::Histogram& StepRows(const std::string& kind);  // "decode", "verify", "prefill"
  prometheus::Family<prometheus::Counter>& computed_rows;    // rows run, by kind
  prometheus::Counter& ComputedRows(const std::string& kind);
  prometheus::Histogram& step_seconds;        // one step's forward pass
  prometheus::Histogram& step_sessions;       // sessions whose rows shared a step
  prometheus::Histogram& queue_wait_seconds;  // a request's wait before its first step
  // Paged KV memory: blocks by state ("used", "shared", "cached", "free").
  prometheus::Family<prometheus::Gauge>& kv_blocks;
  prometheus::Gauge& KvBlocks(const std::string& state);
  prometheus::Counter& preemptions;           // idle sessions whose blocks were reclaimed
  prometheus::Counter& prefix_cached_tokens;  // prompt positions served from shared blocks
  prometheus::Counter& continued_tokens;      // tokens a busy target drew alone after a verify's
  prometheus::Histogram& constraint_mask_seconds;  // one token mask of an output constraint
  const std::string role;
};

// The coordinator's metrics. Acceptance rate and tokens/s are PromQL over these:
//   rate(tandem_accepted_tokens_total[1m]) / rate(tandem_draft_tokens_total[1m])
//   rate(tandem_generated_tokens_total[1m])
struct CoordinatorMetrics {
  explicit CoordinatorMetrics(prometheus::Registry& registry);

  // Finished requests by outcome: "ok", "invalid_argument", "cancelled", "error", ...
  prometheus::Counter& Requests(const std::string& outcome);
  // Rounds in which guess `position` (0-based) was accepted.
  prometheus::Counter& AcceptedAtPosition(int position);
  // Calls to draft workers by outcome: "ok", "slow" (answered past the draft's usual time,
  // still used) or "failed" (an error, or no answer within the liveness bound).
  prometheus::Counter& DraftCalls(const std::string& outcome);

  // Requests with an output constraint, by kind ("json_object", "json_schema", "grammar",
  // "regex").
  prometheus::Counter& ConstrainedRequests(const std::string& kind);

  prometheus::Family<prometheus::Counter>& requests;
  prometheus::Family<prometheus::Counter>& accepted_by_position;
  prometheus::Family<prometheus::Counter>& constrained_requests;
  prometheus::Counter& forced_tokens;  // guesses a constraint forced (no drafter)
  prometheus::Family<prometheus::Counter>& draft_calls;
  prometheus::Counter& drafts;                // draft calls (rounds with a draft)
  prometheus::Counter& draft_tokens;          // guesses proposed
  prometheus::Counter& accepted_tokens;       // guesses the target kept
  prometheus::Counter& generated_tokens;      // tokens streamed to clients
  prometheus::Counter& prompt_tokens;         // prompt tokens of requests
  prometheus::Counter& cached_prompt_tokens;  // of which served from a session's cache
  prometheus::Counter& draft_failures;        // requests that lost their draft and went on alone
  prometheus::Histogram& time_to_first_token;
  prometheus::Histogram& inter_token_latency;
  prometheus::Histogram& request_duration;
  prometheus::Histogram& draft_call;
  prometheus::Histogram& verify_call;
  prometheus::Histogram& tokens_per_round;
  prometheus::Gauge& active_sessions;  // named sessions held plus one-off requests running
  prometheus::Gauge& queued_requests;  // requests waiting in the admission queue
  // Predicted outputs: the prediction's guesses the target kept and refused.
  prometheus::Counter& prediction_accepted_tokens;
  prometheus::Counter& prediction_rejected_tokens;
  // What a gateway routes on (docs/operations.md: Gateway API Inference Extension), beside
  // queued_requests: Generate requests admitted and running, and the share of the target
  // workers' KV blocks in use, 0..1 (summed over the ready targets).
  prometheus::Gauge& running_requests;
  prometheus::Gauge& kv_cache_usage;
};

// Buckets for durations from 100 µs to 30 s.
prometheus::Histogram::BucketBoundaries LatencyBuckets();

}  // namespace tandem

#endif  // TANDEM_WIRE_METRICS_H_
