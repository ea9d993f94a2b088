#include "core/grammar/return_positions.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"

namespace tandem {

std::vector<std::vector<int32_t>> ReturnPositions(const Grammar& grammar) {
  const size_t rules = grammar.rules.size();
  const std::vector<int32_t>& code = grammar.code;
  std::vector<absl::flat_hash_set<int32_t>> returns(rules);
  std::vector<std::vector<int32_t>> tail_callees(rules);  // rule -> rules it tail-calls
  if (grammar.root >= 0 && static_cast<size_t>(grammar.root) < rules) {
    returns[grammar.root].insert(-1);
  }
  for (size_t r = 0; r < rules; ++r) {
    for (int32_t start : grammar.rules[r]) {
      for (int32_t pos = start; code[pos] != kEndOfAlternative; ++pos) {
        if (!IsRuleRef(code[pos])) continue;
        if (code[pos + 1] != kEndOfAlternative) {
          returns[code[pos]].insert(pos + 1);
        } else {
          tail_callees[r].push_back(code[pos]);
        }
      }
    }
  }
  // A tail-called rule returns wherever its caller does: propagate until nothing changes.
  std::vector<int32_t> work;
  for (size_t r = 0; r < rules; ++r) work.push_back(static_cast<int32_t>(r));
  std::vector<bool> queued(rules, true);
  while (!work.empty()) {
    const int32_t r = work.back();
    work.pop_back();
    queued[r] = false;
    for (int32_t callee : tail_callees[r]) {
      if (callee == r) continue;  // a loop returns where it already does
      bool grew = false;
      for (int32_t at : returns[r]) grew = returns[callee].insert(at).second || grew;
      if (grew && !queued[callee]) {
        queued[callee] = true;
        work.push_back(callee);
      }
    }
  }
  std::vector<std::vector<int32_t>> out(rules);
  for (size_t r = 0; r < rules; ++r) {
    out[r].assign(returns[r].begin(), returns[r].end());
    std::sort(out[r].begin(), out[r].end());
  }
  return out;
}

}  // namespace tandem
