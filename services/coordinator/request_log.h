// The operator's record of one Generate call: one log line when it ends, with the request's
// number (in this process), session, outcome, tokens streamed, finish reason and seconds:
//
//   I... request_log.cc:NN] request 17 session=oneoff-17 outcome=ok tokens=32
//       finish=FINISH_REASON_LENGTH seconds=0.412
//   I... request_log.cc:NN] request 19 session=- constraint=json_schema outcome=ok tokens=12
//       finish=FINISH_REASON_STOP_TOKEN forced=7 seconds=0.120
//   W... request_log.cc:NN] request 18 session=chat-1 outcome=unavailable tokens=5
//       seconds=10.2: worker 10.0.0.7:50051 failed: ...   (the full, internal message)
//
// Not thread-safe: one per call, used by the handler's thread.
#ifndef TANDEM_SERVICES_COORDINATOR_REQUEST_LOG_H_
#define TANDEM_SERVICES_COORDINATOR_REQUEST_LOG_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

class RequestLog {
 public:
  explicit RequestLog(const v1::GenerateRequest& request);
  // Each message written to the client: counts tokens, notes the final's session and reason.
  void Saw(const v1::GenerateResponse& response);
  // Logs the line: INFO for OK and client-caused outcomes (invalid argument, not found, out of
  // range, cancelled, ...), WARNING for the service's own (unavailable, internal, deadline...).
  void Done(const absl::Status& status);
  // The line Done logs, without glog's prefix.
  std::string Line(const absl::Status& status) const;

 private:
  uint64_t number_;
  std::string session_;
  std::string finish_;
  std::string constraint_;  // the kind of the request's constraint; empty: none
  int64_t forced_ = 0;      // SpeculationStats.forced_tokens
  int64_t tokens_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_REQUEST_LOG_H_
