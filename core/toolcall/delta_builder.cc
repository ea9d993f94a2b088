#include "core/toolcall/delta_builder.h"

#include <utility>

#include "core/toolcall/json_value_scanner.h"

namespace tandem::toolcall {

void DeltaBuilder::Content(char c) {
  if (IsJsonSpace(c)) {
    pending_space_.push_back(c);
    return;
  }
  if (!after_call_) out_.content += pending_space_;
  pending_space_.clear();
  after_call_ = false;
  out_.content.push_back(c);
}

void DeltaBuilder::Content(absl::string_view text) {
  for (char c : text) Content(c);
}

void DeltaBuilder::StartHolding(absl::string_view marker) {
  holding_ = true;
  held_.assign(marker.data(), marker.size());
}

void DeltaBuilder::Hold(char c) {
  if (holding_) held_.push_back(c);
}

void DeltaBuilder::ReleaseHeld() {
  std::string held = std::move(held_);
  held_.clear();
  holding_ = false;
  ResetCall();
  Content(held);
}

void DeltaBuilder::DropHeld() {
  held_.clear();
  holding_ = false;
  ResetCall();
}

void DeltaBuilder::BeginCall() {
  ResetCall();
  if (!holding_) {
    holding_ = true;
    held_.clear();
  }
}

bool DeltaBuilder::SetName(std::string name) {
  if (name.empty() || !name_.empty()) return false;
  name_ = std::move(name);
  if (args_begun_) Announce();
  return true;
}

void DeltaBuilder::SetId(std::string id) {
  id_ = std::move(id);
  if (announced_) CallDelta().id = id_;
}

bool DeltaBuilder::ArgsBegin() {
  if (args_begun_) return false;
  args_begun_ = true;
  if (!name_.empty()) Announce();
  return true;
}

void DeltaBuilder::ArgsByte(char c) {
  if (announced_) {
    CallDelta().arguments.push_back(c);
  } else {
    args_.push_back(c);
  }
}

bool DeltaBuilder::EndCall() {
  if (name_.empty()) return false;
  if (!announced_) {
    args_ = "{}";
    Announce();
  }
  ResetCall();
  return true;
}

void DeltaBuilder::Announce() {
  ToolCallDelta delta;
  delta.index = next_index_++;
  delta.id = id_;
  delta.name = name_;
  delta.arguments = std::move(args_);
  args_.clear();
  out_.calls.push_back(std::move(delta));
  announced_ = true;
  holding_ = false;
  held_.clear();
  pending_space_.clear();
  after_call_ = true;
}

ToolCallDelta& DeltaBuilder::CallDelta() {
  const int index = next_index_ - 1;
  if (out_.calls.empty() || out_.calls.back().index != index) {
    ToolCallDelta delta;
    delta.index = index;
    out_.calls.push_back(std::move(delta));
  }
  return out_.calls.back();
}

void DeltaBuilder::ResetCall() {
  announced_ = false;
  args_begun_ = false;
  name_.clear();
  id_.clear();
  args_.clear();
}

void DeltaBuilder::FinishContent() {
  if (!after_call_) out_.content += pending_space_;
  pending_space_.clear();
}

ParsedDelta DeltaBuilder::Take() {
  ParsedDelta delta = std::move(out_);
  out_ = ParsedDelta();
  return delta;
}

}  // namespace tandem::toolcall
