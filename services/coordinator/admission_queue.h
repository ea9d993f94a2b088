// Admission control of the coordinator: at most `capacity` requests run at once (the target
// workers' sessions, learnt from their Describe), and, when the targets have a KV budget, only
// as many as their KV blocks hold together, each counted at the most its cache may reach
// (kv_admission.h); the others wait in a bounded FIFO queue, each until its deadline, instead
// of failing at once or, worse, running out of memory after their first token.
//
//   ASSIGN_OR_RETURN(AdmissionQueue::Ticket ticket, queue.Admit(deadline, cancelled, blocks));
//   ... run the request; destroying the ticket admits the next one ...
//
// Thread-safe.
#ifndef TANDEM_SERVICES_COORDINATOR_ADMISSION_QUEUE_H_
#define TANDEM_SERVICES_COORDINATOR_ADMISSION_QUEUE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/decoder/kv_memory.h"

namespace tandem {

class AdmissionQueue {
 public:
  // A running request's slot, freed when the ticket is destroyed.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept : queue_(other.queue_), blocks_(other.blocks_) {
      other.queue_ = nullptr;
    }
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();

   private:
    friend class AdmissionQueue;
    Ticket(AdmissionQueue* queue, const KvBlockDemand& blocks) : queue_(queue), blocks_(blocks) {}
    AdmissionQueue* queue_ = nullptr;
    KvBlockDemand blocks_;  // the KV blocks it reserves
  };

  // `capacity` >= 1 requests run at once; at most `max_waiting` >= 0 wait. `on_waiting`
  // (may be empty; e.g. a gauge) hears the queue's length whenever it changes.
  AdmissionQueue(int capacity, int max_waiting,
                 std::function<void(int waiting)> on_waiting = nullptr);

  // Returns a slot, with `blocks` KV blocks reserved, at once when a slot and the blocks are
  // free and nobody waits; otherwise waits in turn (first in, first out: a large request is
  // not overtaken forever by small ones). kResourceExhausted when max_waiting requests already
  // wait, or when `blocks` exceed the whole KV capacity (it could never run; naming both);
  // kDeadlineExceeded when `deadline` passes first; kCancelled when `cancelled()` (polled
  // every 20 ms) says so.
  absl::StatusOr<Ticket> Admit(absl::Time deadline, const std::function<bool()>& cancelled,
                               const KvBlockDemand& blocks = KvBlockDemand());

  int capacity() const;
  // Target replicas came or went: `capacity` (>= 1) from now on; running requests above it
  // finish, and no new one starts until they are below.
  void SetCapacity(int capacity);
  // The target workers' KV blocks (global 0: no bound, blocks are not counted); a smaller
  // capacity lets reserved blocks above it drain, as SetCapacity does.
  void SetKvCapacity(const KvBlockDemand& blocks);
  int running() const;
  int waiting() const;
  KvBlockDemand reserved_blocks() const;

 private:
  void Release(const KvBlockDemand& blocks);
  // Whether `blocks` fit beside those reserved now (mutex_ held).
  bool FitsLocked(const KvBlockDemand& blocks) const;
  // kResourceExhausted when `blocks` exceed the whole capacity (mutex_ held).
  absl::Status CheckFitsAtAllLocked(const KvBlockDemand& blocks) const;
  // Removes `id` from the waiting line (it left: deadline or cancellation).
  void Leave(uint64_t id);
  void Report() const;  // calls on_waiting_ (with mutex_ held)

  int capacity_;  // guarded by mutex_
  const int max_waiting_;
  const std::function<void(int)> on_waiting_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int running_ = 0;
  KvBlockDemand kv_capacity_;  // global 0: unbounded
  KvBlockDemand reserved_;
  uint64_t next_id_ = 0;
  std::deque<uint64_t> waiting_;  // ids in arrival order
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_ADMISSION_QUEUE_H_
