#include "services/common/metrics.h"

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
      batch_size(batch_tokens.Add({{"role", role}},
                                  prometheus::Histogram::BucketBoundaries{1, 2, 3, 4, 5, 6, 8,
                                                                          12, 16, 32, 64, 128,
                                                                          256, 512})),
      role(role) {}

prometheus::Histogram& WorkerMetrics::ComputeSeconds(const std::string& kind) {
  return compute_seconds.Add({{"role", role}, {"kind", kind}}, LatencyBuckets());
}

prometheus::Counter& WorkerMetrics::Errors(const std::string& kind) {
  return errors.Add({{"role", role}, {"kind", kind}});
}

}  // namespace tandem
