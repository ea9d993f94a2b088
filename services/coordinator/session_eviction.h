// Which of the coordinator's named sessions to forget (history and worker caches): those idle
// longer than --session-idle-seconds, and, when a new session needs room under
// --max-sessions, the least recently used idle ones. A session with a request running is
// never chosen.
#ifndef TANDEM_SERVICES_COORDINATOR_SESSION_EVICTION_H_
#define TANDEM_SERVICES_COORDINATOR_SESSION_EVICTION_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace tandem {

struct SessionUse {
  std::string id;
  absl::Time last_used;  // when its last request started or ended
  bool busy = false;     // a request is running
};

// Ids to evict: every idle session last used before `idle_cutoff`, then, least recently used
// first, idle ones until at most `keep` sessions remain. Fewer than that when too many are
// busy. Ties by id, so the choice is deterministic.
std::vector<std::string> SessionsToEvict(std::vector<SessionUse> sessions, size_t keep,
                                         absl::Time idle_cutoff);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_SESSION_EVICTION_H_
