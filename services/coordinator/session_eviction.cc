#include "services/coordinator/session_eviction.h"

#include <algorithm>

namespace tandem {

std::vector<std::string> SessionsToEvict(std::vector<SessionUse> sessions, size_t keep,
                                         absl::Time idle_cutoff) {
  std::sort(sessions.begin(), sessions.end(), [](const SessionUse& a, const SessionUse& b) {
    return a.last_used != b.last_used ? a.last_used < b.last_used : a.id < b.id;
  });
  std::vector<std::string> evicted;
  size_t remaining = sessions.size();
  for (const SessionUse& s : sessions) {  // oldest first
    if (s.busy) continue;
    if (s.last_used >= idle_cutoff && remaining <= keep) break;
    evicted.push_back(s.id);
    --remaining;
  }
  return evicted;
}

}  // namespace tandem
