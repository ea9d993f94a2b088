// Admission control of the coordinator: at most `capacity` requests run at once (the target
// workers' sessions, learnt from their Describe); the others wait in a bounded FIFO queue,
// each until its deadline, instead of failing at once.
//
//   ASSIGN_OR_RETURN(AdmissionQueue::Ticket ticket, queue.Admit(deadline, cancelled));
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

namespace tandem {

class AdmissionQueue {
 public:
  // A running request's slot, freed when the ticket is destroyed.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept : queue_(other.queue_) { other.queue_ = nullptr; }
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();

   private:
    friend class AdmissionQueue;
    explicit Ticket(AdmissionQueue* queue) : queue_(queue) {}
    AdmissionQueue* queue_ = nullptr;
  };

  // `capacity` >= 1 requests run at once; at most `max_waiting` >= 0 wait. `on_waiting`
  // (may be empty; e.g. a gauge) hears the queue's length whenever it changes.
  AdmissionQueue(int capacity, int max_waiting,
                 std::function<void(int waiting)> on_waiting = nullptr);

  // Returns a slot at once when one is free and nobody waits; otherwise waits in turn.
  // kResourceExhausted when max_waiting requests already wait; kDeadlineExceeded when
  // `deadline` passes first; kCancelled when `cancelled()` (polled every 20 ms) says so.
  absl::StatusOr<Ticket> Admit(absl::Time deadline, const std::function<bool()>& cancelled);

  int capacity() const;
  // Target replicas came or went: `capacity` (>= 1) from now on; running requests above it
  // finish, and no new one starts until they are below.
  void SetCapacity(int capacity);
  int running() const;
  int waiting() const;

 private:
  void Release();
  // Removes `id` from the waiting line (it left: deadline or cancellation).
  void Leave(uint64_t id);
  void Report() const;  // calls on_waiting_ (with mutex_ held)

  int capacity_;  // guarded by mutex_
  const int max_waiting_;
  const std::function<void(int)> on_waiting_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int running_ = 0;
  uint64_t next_id_ = 0;
  std::deque<uint64_t> waiting_;  // ids in arrival order
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_ADMISSION_QUEUE_H_
