// Every Prometheus metric Tandem exports, declared in this one file. Prefix `tandem_`, base
// units, `_total` on counters, low-cardinality labels (role, kind, outcome, position).
//
// Thread-safe (prometheus-cpp metrics are).
#ifndef TANDEM_SERVICES_COMMON_METRICS_H_
#define TANDEM_SERVICES_COMMON_METRICS_H_

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
  prometheus::Gauge& kv_cache_bytes;
  prometheus::Gauge& kv_cache_capacity_bytes;
  prometheus::Histogram& batch_size;  // tokens per forward pass of a request
  const std::string role;
};

// Buckets for durations from 100 µs to 30 s.
prometheus::Histogram::BucketBoundaries LatencyBuckets();

}  // namespace tandem

#endif  // TANDEM_SERVICES_COMMON_METRICS_H_
