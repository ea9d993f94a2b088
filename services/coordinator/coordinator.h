// The coordinator's logic behind tandem.v1.Generator, over WorkerClients: it learns the
// tokenizer's bytes, special ids and template from the target's Describe, checks that every
// draft shares the target's vocabulary, keeps each session's authoritative history, pins a
// session to one target and one draft replica, and runs the rounds (round_loop.h).
//
// Thread-safe: requests of different sessions run in parallel; a session serves one request
// at a time (a second concurrent one is kAborted).
#ifndef TANDEM_SERVICES_COORDINATOR_COORDINATOR_H_
#define TANDEM_SERVICES_COORDINATOR_COORDINATOR_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/common/metrics.h"
#include "services/coordinator/round_loop.h"
#include "services/coordinator/worker_client.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

struct CoordinatorOptions {
  std::vector<std::string> targets;  // worker addresses
  std::vector<std::string> drafts;
  int32_t default_draft_tokens = 4;
  bool adaptive_draft = false;
  int max_sessions = 64;
  int32_t default_max_tokens = 256;
  absl::Duration worker_wait = absl::Seconds(120);  // how long start-up waits for workers
};

class Coordinator {
 public:
  // Waits for the workers, reads the target's vocabulary and refuses a draft whose
  // vocabulary differs (kFailedPrecondition naming both models).
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(const CoordinatorOptions& options,
                                                             CoordinatorMetrics* metrics);
  // For tests: clients made by the caller (e.g. over in-process channels).
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(
      const CoordinatorOptions& options, std::vector<std::unique_ptr<WorkerClient>> targets,
      std::vector<std::unique_ptr<WorkerClient>> drafts, CoordinatorMetrics* metrics);

  // Runs a request, calling `write` with each delta and then the final message; `cancelled`
  // is polled between rounds. Errors as Generator.Generate documents.
  absl::Status Generate(const v1::GenerateRequest& request,
                        const std::function<bool(const v1::GenerateResponse&)>& write,
                        const std::function<bool()>& cancelled);
  absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request);
  // The models as public clients may see them: names, never file paths.
  v1::DescribeModelResponse Describe() const;
  // Worker addresses and model paths, each with the label public errors show instead.
  std::vector<std::pair<std::string, std::string>> Redactions() const;
  absl::Status CloseSession(const std::string& session_id);
  int active_sessions() const;

 private:
  struct Session {
    std::mutex mutex;  // held by the request using the session
    SessionWorkers workers;
    size_t target_index = 0;
  };

  Coordinator(const CoordinatorOptions& options, CoordinatorMetrics* metrics)
      : options_(options), metrics_(metrics) {}
  absl::Status Init();
  absl::StatusOr<std::vector<int32_t>> PromptTokens(const v1::GenerateRequest& request);
  absl::StatusOr<std::shared_ptr<Session>> NewSession(const std::string& id);
  absl::StatusOr<std::shared_ptr<Session>> FindOrCreate(const v1::GenerateRequest& request,
                                                        std::string* id);

  CoordinatorOptions options_;
  CoordinatorMetrics* metrics_;
  std::vector<std::unique_ptr<WorkerClient>> targets_;
  std::vector<std::unique_ptr<WorkerClient>> drafts_;
  v1::ModelInfo target_info_;
  std::optional<v1::ModelInfo> draft_info_;
  std::vector<std::string> token_bytes_;
  std::atomic<uint64_t> next_replica_{0};
  std::atomic<uint64_t> next_session_{1};

  mutable absl::Mutex mutex_;
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_COORDINATOR_H_
