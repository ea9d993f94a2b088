#include "core/grammar/free_text_rules.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/base/utf8.h"
#include "core/grammar/special_token.h"

namespace tandem {
namespace {

absl::StatusOr<std::vector<uint32_t>> CodePoints(absl::string_view text) {
  if (absl::Status valid = utf8::Validate(text); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("free text marker '", text, "': ", valid.message()));
  }
  std::vector<uint32_t> cps;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<uint8_t>(text[i]);
    const size_t n = utf8::SequenceLength(lead);
    uint32_t cp = n == 1 ? lead : lead & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3F);
    cps.push_back(cp);
    i += n;
  }
  return cps;
}

// The Aho-Corasick automaton of the markers: node 0 is the empty match; Next follows the
// failure links, so a node is the longest end of the text read that begins some marker.
class MarkerAutomaton {
 public:
  explicit MarkerAutomaton(const std::vector<std::vector<uint32_t>>& markers) {
    nodes_.emplace_back();
    for (const std::vector<uint32_t>& marker : markers) {
      int32_t at = 0;
      for (uint32_t cp : marker) {
        auto it = nodes_[at].children.find(cp);
        if (it == nodes_[at].children.end()) {
          nodes_.emplace_back();
          it = nodes_[at].children.emplace(cp, static_cast<int32_t>(nodes_.size() - 1)).first;
        }
        at = it->second;
        alphabet_.push_back(cp);
      }
      nodes_[at].hit = true;
    }
    std::sort(alphabet_.begin(), alphabet_.end());
    alphabet_.erase(std::unique(alphabet_.begin(), alphabet_.end()), alphabet_.end());
    LinkFailures();
  }

  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }
  bool Hit(int32_t node) const { return nodes_[node].hit; }
  const std::vector<uint32_t>& alphabet() const { return alphabet_; }

  int32_t Next(int32_t node, uint32_t cp) const {
    while (true) {
      auto it = nodes_[node].children.find(cp);
      if (it != nodes_[node].children.end()) return it->second;
      if (node == 0) return 0;
      node = nodes_[node].fail;
    }
  }

  // The node after `cps` from `node`, or -1 if a marker ends before the last one (or, with
  // `to_end`, at the last one too).
  int32_t Feed(int32_t node, const std::vector<uint32_t>& cps, bool to_end) const {
    for (size_t i = 0; i < cps.size(); ++i) {
      node = Next(node, cps[i]);
      if (Hit(node) && (to_end || i + 1 < cps.size())) return -1;
    }
    return node;
  }

 private:
  struct Node {
    std::map<uint32_t, int32_t> children;
    int32_t fail = 0;
    bool hit = false;  // some marker ends here (or at its failure chain)
  };

  void LinkFailures() {
    std::deque<int32_t> queue;
    for (const auto& [cp, child] : nodes_[0].children) queue.push_back(child);
    while (!queue.empty()) {
      const int32_t node = queue.front();
      queue.pop_front();
      for (const auto& [cp, child] : nodes_[node].children) {
        int32_t f = nodes_[node].fail;
        while (f != 0 && nodes_[f].children.count(cp) == 0) f = nodes_[f].fail;
        auto it = nodes_[f].children.find(cp);
        nodes_[child].fail = it != nodes_[f].children.end() && it->second != child ? it->second : 0;
        nodes_[child].hit = nodes_[child].hit || nodes_[nodes_[child].fail].hit;
        queue.push_back(child);
      }
    }
  }

  std::vector<Node> nodes_;
  std::vector<uint32_t> alphabet_;
};

// Sorted code points as ranges.
std::vector<CodepointRange> Ranges(const std::vector<uint32_t>& sorted) {
  std::vector<CodepointRange> ranges;
  for (uint32_t cp : sorted) {
    if (!ranges.empty() && ranges.back().hi + 1 == cp) {
      ranges.back().hi = cp;
    } else {
      ranges.push_back({cp, cp});
    }
  }
  return ranges;
}

// The alternatives of free-text state `node`: a character to the next state, a control token,
// a marker and what follows it, the end.
std::vector<GrammarExpr> StateAlternatives(const MarkerAutomaton& automaton, int32_t node,
                                           const std::vector<int32_t>& state_rules,
                                           const std::vector<std::vector<uint32_t>>& marker_cps,
                                           const std::vector<int32_t>& after_rules,
                                           const std::vector<std::vector<uint32_t>>& special_cps,
                                           const std::vector<std::string>& special_texts,
                                           bool may_end) {
  std::vector<GrammarExpr> alts;
  if (may_end) alts.push_back(GrammarExpr::Empty());
  for (size_t m = 0; m < marker_cps.size(); ++m) {
    if (after_rules[m] >= 0 && automaton.Feed(node, marker_cps[m], /*to_end=*/false) >= 0) {
      alts.push_back(GrammarExpr::Rule(after_rules[m]));
    }
  }
  std::map<int32_t, std::vector<uint32_t>> by_target;  // sorted code points per next state
  std::vector<uint32_t> not_to_start;  // the alphabet's characters that do not lead to node 0
  for (uint32_t cp : automaton.alphabet()) {
    const int32_t next = automaton.Next(node, cp);
    if (next == 0) continue;
    not_to_start.push_back(cp);
    if (!automaton.Hit(next)) by_target[next].push_back(cp);
  }
  alts.push_back(GrammarExpr::Sequence(
      {GrammarExpr::CharClass(Ranges(not_to_start), true), GrammarExpr::Rule(state_rules[0])}));
  for (const auto& [next, cps] : by_target) {
    alts.push_back(GrammarExpr::Sequence(
        {GrammarExpr::CharClass(Ranges(cps)), GrammarExpr::Rule(state_rules[next])}));
  }
  for (size_t k = 0; k < special_cps.size(); ++k) {
    const int32_t next = automaton.Feed(node, special_cps[k], /*to_end=*/true);
    if (next < 0) continue;
    alts.push_back(GrammarExpr::Sequence(
        {SpecialTokenLiteral(special_texts[k]), GrammarExpr::Rule(state_rules[next])}));
  }
  return alts;
}

}  // namespace

absl::StatusOr<GrammarExpr> AddFreeTextRules(GrammarBuilder& builder, absl::string_view name,
                                             const std::vector<TextMarker>& markers,
                                             const FreeTextOptions& options) {
  std::vector<std::vector<uint32_t>> marker_cps;
  for (const TextMarker& marker : markers) {
    if (marker.text.empty()) return absl::InvalidArgumentError("free text marker is empty");
    ASSIGN_OR_RETURN(std::vector<uint32_t> cps, CodePoints(marker.text));
    marker_cps.push_back(std::move(cps));
  }
  std::vector<std::vector<uint32_t>> special_cps;
  for (const std::string& text : options.special_tokens) {
    if (text.empty()) return absl::InvalidArgumentError("free text control token is empty");
    ASSIGN_OR_RETURN(std::vector<uint32_t> cps, CodePoints(text));
    special_cps.push_back(std::move(cps));
  }
  const MarkerAutomaton automaton(marker_cps);
  std::vector<int32_t> state_rules(automaton.size(), -1);
  for (int32_t node = 0; node < automaton.size(); ++node) {
    if (!automaton.Hit(node)) {
      state_rules[node] = builder.AddRule(absl::StrCat(name, node == 0 ? "" : "/", node));
    }
  }
  std::vector<int32_t> after_rules(markers.size(), -1);
  for (size_t m = 0; m < markers.size(); ++m) {
    if (!markers[m].then.has_value()) continue;
    after_rules[m] = builder.AddRule(absl::StrCat(name, "/after-", markers[m].text));
    GrammarExpr marker = markers[m].also_special ? TextOrSpecialToken(markers[m].text)
                                                 : GrammarExpr::Literal(markers[m].text);
    RETURN_IF_ERROR(builder.DefineRule(
        after_rules[m], GrammarExpr::Sequence({std::move(marker), *markers[m].then})));
  }
  for (int32_t node = 0; node < automaton.size(); ++node) {
    if (state_rules[node] < 0) continue;
    RETURN_IF_ERROR(builder.DefineRule(
        state_rules[node], GrammarExpr::Choice(StateAlternatives(
                               automaton, node, state_rules, marker_cps, after_rules, special_cps,
                               options.special_tokens, options.may_end))));
  }
  return GrammarExpr::Rule(state_rules[0]);
}

}  // namespace tandem
