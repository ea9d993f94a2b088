// The functionary families, whose call names are written outside JSON:
// v3.1 <function=f>{...}</function>, repeated; v3.2 >>>f\n{...} per call, >>>all\n before
// plain text (the prompt ends with ">>>", so the output's first recipient has none).
#include <memory>
#include <vector>

#include "core/toolcall/call_syntax.h"

namespace tandem::toolcall {
namespace {

class FunctionaryV31Syntax : public CallSyntax {
 public:
  const std::vector<CallMarker>& markers() const override {
    static const auto* markers = new std::vector<CallMarker>{{"<function="}};
    return *markers;
  }
  void Begin(int, DeltaBuilder& out) override {
    out.BeginCall();
    name_.Reset('>');
    state_ = State::kName;
  }
  ScanResult Step(char c, DeltaBuilder& out) override {
    switch (state_) {
      case State::kName: {
        const ScanResult result = name_.Step(c);
        if (result != ScanResult::kDone) return result;
        if (!out.SetName(name_.name())) return ScanResult::kFail;
        args_.Reset();
        state_ = State::kArgs;
        return ScanResult::kConsumed;
      }
      case State::kArgs: {
        const ScanResult result = args_.Step(c, out);
        if (result != ScanResult::kDone && result != ScanResult::kDoneBefore) return result;
        out.EndCall();
        close_.Reset({"</function>"});
        state_ = State::kClose;
        return result == ScanResult::kDone ? ScanResult::kConsumed : Step(c, out);
      }
      case State::kClose:
        return close_.StepAfterSpace(c);
    }
    return ScanResult::kFail;
  }

 private:
  enum class State : uint8_t { kName, kArgs, kClose };
  State state_ = State::kName;
  NameReader name_;
  ArgsReader args_;
  LiteralMatcher close_;
};

class FunctionaryV32Syntax : public CallSyntax {
 public:
  const std::vector<CallMarker>& markers() const override {
    static const auto* markers = new std::vector<CallMarker>{{">>>"}};
    return *markers;
  }
  bool starts_in_syntax() const override { return true; }
  void Begin(int, DeltaBuilder& out) override {
    out.BeginCall();
    name_.Reset('\n');
    state_ = State::kRecipient;
  }
  ScanResult Step(char c, DeltaBuilder& out) override {
    switch (state_) {
      case State::kRecipient: {
        const ScanResult result = name_.Step(c);
        if (result != ScanResult::kDone) return result;
        if (name_.name() == "all") return ScanResult::kDone;  // plain text follows
        if (!out.SetName(name_.name())) return ScanResult::kFail;
        args_.Reset();
        state_ = State::kArgs;
        return ScanResult::kConsumed;
      }
      case State::kArgs: {
        const ScanResult result = args_.Step(c, out);
        if (result != ScanResult::kDone && result != ScanResult::kDoneBefore) return result;
        out.EndCall();
        state_ = State::kAfter;
        return result == ScanResult::kDone ? ScanResult::kConsumed : Step(c, out);
      }
      case State::kAfter:
        // The next ">>>" is found as a marker in the text.
        return IsJsonSpace(c) ? ScanResult::kConsumed : ScanResult::kDoneBefore;
    }
    return ScanResult::kFail;
  }

 private:
  enum class State : uint8_t { kRecipient, kArgs, kAfter };
  State state_ = State::kRecipient;
  NameReader name_;
  ArgsReader args_;
};

}  // namespace

std::unique_ptr<CallSyntax> NewFunctionaryV31Syntax() {
  return std::make_unique<FunctionaryV31Syntax>();
}
std::unique_ptr<CallSyntax> NewFunctionaryV32Syntax() {
  return std::make_unique<FunctionaryV32Syntax>();
}

}  // namespace tandem::toolcall
