// tandem.v1.Worker over a WorkerEngine: thin handlers that convert protos, validate, and
// call the engine (which runs model work one request at a time, in order).
//
// Until SetEngine() is called (the model is loading) every call is UNAVAILABLE. A session
// stream with no request for `idle_timeout` is cancelled, which frees its cache; so is an
// Attach whose first message (`open`) does not arrive within `open_timeout`, and the stream of a
// session the engine evicted to make room for another (the coordinator re-attaches and re-fills
// it).
//
// Thread-safe: gRPC calls the handlers on its own threads.
#ifndef TANDEM_WORKERS_WORKER_SERVICE_H_
#define TANDEM_WORKERS_WORKER_SERVICE_H_

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tandem/v1/worker.grpc.pb.h"
#include "wire/metrics.h"
#include "workers/worker_engine.h"

namespace tandem {

class WorkerService final : public v1::Worker::Service {
 public:
  explicit WorkerService(WorkerMetrics* metrics, absl::Duration idle_timeout = absl::Minutes(10),
                         absl::Duration open_timeout = absl::Seconds(10));
  ~WorkerService() override;

  // Starts serving with `engine` (not owned; outlives the service).
  void SetEngine(WorkerEngine* engine) { engine_.store(engine); }

  grpc::Status Describe(grpc::ServerContext* context, const v1::DescribeRequest* request,
                        v1::DescribeResponse* response) override;
  grpc::Status Tokenize(grpc::ServerContext* context, const v1::TokenizeRequest* request,
                        v1::TokenizeResponse* response) override;
  grpc::Status Attach(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream) override;
  // --- #30 embeddings ---
  // Defined in worker_embed_rpc.cc.
  grpc::Status Embed(grpc::ServerContext* context, const v1::EmbedTokensRequest* request,
                     v1::EmbedTokensResponse* response) override;
  // --- end ---

 private:
  // One request of an open session; errors become RequestError (the session lives on).
  void Serve(WorkerEngine& engine, int64_t session, const v1::SessionRequest& request,
             v1::SessionResponse* response);
  void UpdateGauges(const WorkerEngine& engine);
  // Watched streams: each is cancelled once its deadline passes (idle_timeout after its last
  // request; open_timeout after it started while `open` has not arrived).
  void Touch(grpc::ServerContext* context);
  void AwaitOpen(grpc::ServerContext* context);
  bool Forget(grpc::ServerContext* context);  // false: the watchdog has cancelled it
  void WatchIdleStreams();
  // Which stream carries each session, to cancel those the engine evicts.
  void Register(int64_t session, grpc::ServerContext* context);
  void Unregister(int64_t session);
  void CancelEvicted(const std::vector<int64_t>& sessions);

  std::atomic<WorkerEngine*> engine_{nullptr};
  WorkerMetrics* metrics_;
  const absl::Duration idle_timeout_;
  const absl::Duration open_timeout_;
  absl::Mutex idle_mutex_;
  absl::flat_hash_map<grpc::ServerContext*, absl::Time> deadline_ ABSL_GUARDED_BY(idle_mutex_);
  absl::flat_hash_map<int64_t, grpc::ServerContext*> streams_ ABSL_GUARDED_BY(idle_mutex_);
  bool stopping_ ABSL_GUARDED_BY(idle_mutex_) = false;
  std::thread watchdog_;
};

// Fills `info` from the engine's model and tokenizer (shared by Describe and tests).
void FillModelInfo(const WorkerEngine& engine, v1::ModelInfo* info);

}  // namespace tandem

#endif  // TANDEM_WORKERS_WORKER_SERVICE_H_
