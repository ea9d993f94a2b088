#include "wire/metrics.h"

namespace tandem {

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30};
}

WorkerMetrics::WorkerMetrics(prometheus::Registry& registry, const std::string& role)
    : compute_seconds(prometheus::BuildHistogram()
                          .Name("tandem_worker_compute_seconds")
                          .Help("Model compute time of one worker request, by kind")
                          .Register(registry)),
      batch_tokens(prometheus::BuildHistogram()
                       .Name("tandem_worker_batch_tokens")
                       .Help("Tokens run in the forward passes of one request")
                       .Register(registry)),
      errors(prometheus::BuildCounter()
                 .Name("tandem_worker_errors_total")
                 .Help("Worker requests answered with an error, by kind")
                 .Register(registry)),
      active_sessions(prometheus::BuildGauge()
                          .Name("tandem_worker_active_sessions")
                          .Help("Sessions attached to the worker")
                          .Register(registry)
                          .Add({{"role", role}})),
      evicted_sessions(prometheus::BuildCounter()
                           .Name("tandem_worker_evicted_sessions_total")
                           .Help("Idle sessions evicted (least recently used) to make room")
                           .Register(registry)
                           .Add({{"role", role}})),
      kv_cache_bytes(prometheus::BuildGauge()
                         .Name("tandem_worker_kv_cache_bytes")
                         .Help("Bytes of KV cache held by the worker's sessions")
                         .Register(registry)
                         .Add({{"role", role}})),
      kv_cache_capacity_bytes(prometheus::BuildGauge()
                                  .Name("tandem_worker_kv_cache_capacity_bytes")
                                  .Help("The worker's KV cache budget in bytes (0: unlimited)")
                                  .Register(registry)
                                  .Add({{"role", role}})),
      batch_size(batch_tokens.Add(
          {{"role", role}}, prometheus::Histogram::BucketBoundaries{1, 2, 3, 4, 5, 6, 8, 12, 16, 32,
                                                                    64, 128, 256, 512})),
      step_rows(prometheus::BuildHistogram()
                    .Name("tandem_worker_step_rows")
                    .Help("Rows of one batch scheduler step, by kind")
                    .Register(registry)),
      computed_rows(prometheus::BuildCounter()
                        .Name("tandem_worker_computed_rows_total")
                        .Help("Rows run by the batch scheduler, by kind")
                        .Register(registry)),
      step_seconds(prometheus::BuildHistogram()
                       .Name("tandem_worker_step_seconds")
                       .Help("Forward pass time of one batch scheduler step")
                       .Register(registry)
                       .Add({{"role", role}}, LatencyBuckets())),
      step_sessions(
          prometheus::BuildHistogram()
              .Name("tandem_worker_step_sessions")
              .Help("Sessions whose rows shared one step")
              .Register(registry)
              .Add({{"role", role}},
                   prometheus::Histogram::BucketBoundaries{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64})),
      queue_wait_seconds(prometheus::BuildHistogram()
                             .Name("tandem_worker_queue_wait_seconds")
                             .Help("Time a request waited for its first scheduler step")
                             .Register(registry)
                             .Add({{"role", role}}, LatencyBuckets())),
      kv_blocks(prometheus::BuildGauge()
                    .Name("tandem_worker_kv_blocks")
                    .Help("KV cache blocks of 16 positions, by state (used, shared, cached, free)")
                    .Register(registry)),
      preemptions(prometheus::BuildCounter()
                      .Name("tandem_worker_preemptions_total")
                      .Help("Idle sessions whose KV blocks were reclaimed for others")
                      .Register(registry)
                      .Add({{"role", role}})),
      prefix_cached_tokens(prometheus::BuildCounter()
                               .Name("tandem_worker_prefix_cached_tokens_total")
                               .Help("Positions taken from shared prefix blocks, not computed")
                               .Register(registry)
                               .Add({{"role", role}})),
      continued_tokens(prometheus::BuildCounter()
                           .Name("tandem_worker_continued_tokens_total")
                           .Help("Tokens a busy target drew alone after a verify without "
                                 "guesses (VerifyRequest.continue_tokens)")
                           .Register(registry)
                           .Add({{"role", role}})),
      constraint_mask_seconds(
          prometheus::BuildHistogram()
              .Name("tandem_worker_constraint_mask_seconds")
              .Help("Time to compute the allowed tokens of one position under an output "
                    "constraint (core/grammar)")
              .Register(registry)
              .Add({{"role", role}},
                   prometheus::Histogram::BucketBoundaries{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5,
                                                           1e-4, 2.5e-4, 1e-3, 1e-2, 0.1})),
      role(role) {}

prometheus::Histogram& WorkerMetrics::StepRows(const std::string& kind) {
  return step_rows.Add(
      {{"role", role}, {"kind", kind}},
      prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
}

prometheus::Counter& WorkerMetrics::ComputedRows(const std::string& kind) {
  return computed_rows.Add({{"role", role}, {"kind", kind}});
}

prometheus::Gauge& WorkerMetrics::KvBlocks(const std::string& state) {
  return kv_blocks.Add({{"role", role}, {"state", state}});
}

prometheus::Histogram& WorkerMetrics::ComputeSeconds(const std::string& kind) {
  return compute_seconds.Add({{"role", role}, {"kind", kind}}, LatencyBuckets());
}

prometheus::Counter& WorkerMetrics::Errors(const std::string& kind) {
  return errors.Add({{"role", role}, {"kind", kind}});
}

namespace {

prometheus::Counter& NewCounter(prometheus::Registry& registry, const std::string& name,
                                const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

prometheus::Histogram& NewHistogram(prometheus::Registry& registry, const std::string& name,
                                    const std::string& help,
                                    prometheus::Histogram::BucketBoundaries buckets) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(registry).Add({}, buckets);
}

}  // namespace

CoordinatorMetrics::CoordinatorMetrics(prometheus::Registry& registry)
    : requests(prometheus::BuildCounter()
                   .Name("tandem_requests_total")
                   .Help("Generate requests by outcome")
                   .Register(registry)),
      accepted_by_position(prometheus::BuildCounter()
                               .Name("tandem_accepted_tokens_by_position_total")
                               .Help("Rounds in which the guess at this position was accepted")
                               .Register(registry)),
      constrained_requests(prometheus::BuildCounter()
                               .Name("tandem_constrained_requests_total")
                               .Help("Requests with an output constraint, by kind")
                               .Register(registry)),
      forced_tokens(NewCounter(registry, "tandem_forced_tokens_total",
                               "Guesses an output constraint forced, proposed without a drafter")),
      draft_calls(prometheus::BuildCounter()
                      .Name("tandem_draft_calls_total")
                      .Help("Calls to draft workers by outcome (ok, slow, failed)")
                      .Register(registry)),
      drafts(NewCounter(registry, "tandem_drafts_total", "Draft calls (speculative rounds)")),
      draft_tokens(NewCounter(registry, "tandem_draft_tokens_total", "Guesses the draft made")),
      accepted_tokens(
          NewCounter(registry, "tandem_accepted_tokens_total", "Guesses the target kept")),
      generated_tokens(NewCounter(registry, "tandem_generated_tokens_total",
                                  "Tokens generated and streamed to clients")),
      prompt_tokens(NewCounter(registry, "tandem_prompt_tokens_total", "Prompt tokens")),
      cached_prompt_tokens(NewCounter(registry, "tandem_cached_prompt_tokens_total",
                                      "Prompt tokens served from a session's cache")),
      draft_failures(NewCounter(registry, "tandem_draft_failures_total",
                                "Requests whose draft failed; they went on with the target")),
      time_to_first_token(NewHistogram(registry, "tandem_time_to_first_token_seconds",
                                       "From request to first token", LatencyBuckets())),
      inter_token_latency(NewHistogram(registry, "tandem_inter_token_latency_seconds",
                                       "Between consecutive streamed tokens", LatencyBuckets())),
      request_duration(NewHistogram(registry, "tandem_request_duration_seconds",
                                    "Whole Generate requests", LatencyBuckets())),
      draft_call(NewHistogram(registry, "tandem_draft_call_seconds",
                              "Draft calls as the coordinator sees them", LatencyBuckets())),
      verify_call(NewHistogram(registry, "tandem_verify_call_seconds",
                               "Verify calls as the coordinator sees them", LatencyBuckets())),
      tokens_per_round(NewHistogram(registry, "tandem_tokens_per_round",
                                    "Tokens a speculative round yields",
                                    {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 17})),
      active_sessions(
          prometheus::BuildGauge()
              .Name("tandem_active_sessions")
              .Help("Named sessions the coordinator holds plus one-off requests running")
              .Register(registry)
              .Add({})),
      queued_requests(prometheus::BuildGauge()
                          .Name("tandem_queued_requests")
                          .Help("Requests waiting for a slot in the admission queue")
                          .Register(registry)
                          .Add({})),
      prediction_accepted_tokens(
          NewCounter(registry, "tandem_prediction_accepted_tokens_total",
                     "Guesses from clients' predicted outputs that the target kept")),
      prediction_rejected_tokens(
          NewCounter(registry, "tandem_prediction_rejected_tokens_total",
                     "Guesses from clients' predicted outputs that the target refused")),
      running_requests(prometheus::BuildGauge()
                           .Name("tandem_running_requests")
                           .Help("Generate requests admitted and running")
                           .Register(registry)
                           .Add({})),
      kv_cache_usage(prometheus::BuildGauge()
                         .Name("tandem_kv_cache_usage_ratio")
                         .Help("Share of the ready target workers' KV blocks in use, 0..1")
                         .Register(registry)
                         .Add({})) {}

prometheus::Counter& CoordinatorMetrics::Requests(const std::string& outcome) {
  return requests.Add({{"outcome", outcome}});
}

prometheus::Counter& CoordinatorMetrics::ConstrainedRequests(const std::string& kind) {
  return constrained_requests.Add({{"kind", kind}});
}

prometheus::Counter& CoordinatorMetrics::DraftCalls(const std::string& outcome) {
  return draft_calls.Add({{"outcome", outcome}});
}

prometheus::Counter& CoordinatorMetrics::AcceptedAtPosition(int position) {
  return accepted_by_position.Add({{"position", std::to_string(position)}});
}

}  // namespace tandem
