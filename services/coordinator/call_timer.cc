#include "services/coordinator/call_timer.h"

namespace tandem {

CallTimer::CallTimer() : thread_([this] { Run(); }) {}

CallTimer::~CallTimer() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  thread_.join();
}

CallTimer::Ticket CallTimer::Arm(grpc::ClientContext* context, absl::Time deadline) {
  absl::MutexLock lock(&mutex_);
  Ticket ticket{deadline, next_id_++};
  if (deadline == absl::InfiniteFuture()) return ticket;
  if (armed_.empty() || deadline < armed_.begin()->first.first) ++generation_;
  armed_.emplace(std::make_pair(deadline, ticket.id), context);
  return ticket;
}

bool CallTimer::Disarm(Ticket ticket) {
  absl::MutexLock lock(&mutex_);
  if (armed_.erase({ticket.deadline, ticket.id}) > 0) return false;
  return fired_.erase(ticket.id) > 0;
}

void CallTimer::Run() {
  absl::MutexLock lock(&mutex_);
  while (!stopping_) {
    seen_generation_ = generation_;
    const absl::Time next = armed_.empty() ? absl::InfiniteFuture() : armed_.begin()->first.first;
    mutex_.AwaitWithDeadline(absl::Condition(this, &CallTimer::Woken), next);
    const absl::Time now = absl::Now();
    while (!armed_.empty() && armed_.begin()->first.first <= now) {
      // TryCancel does not block: the pending Read returns false on the caller's thread.
      armed_.begin()->second->TryCancel();
      fired_.insert(armed_.begin()->first.second);
      armed_.erase(armed_.begin());
    }
  }
}

}  // namespace tandem
