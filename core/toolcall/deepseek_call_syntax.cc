// DeepSeek-R1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{...}
// \n```<｜tool▁call▁end｜>, repeated (newlines between), then <｜tool▁calls▁end｜>. The distills
// also write a few variants of the opening marker, and may leave out <｜tool▁call▁begin｜>.
#include <memory>
#include <vector>

#include "core/toolcall/call_syntax.h"

namespace tandem::toolcall {
namespace {

constexpr absl::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr absl::string_view kCallsEnd = "<｜tool▁calls▁end｜>";

class DeepSeekR1Syntax : public CallSyntax {
 public:
  const std::vector<CallMarker>& markers() const override {
    static const auto* markers = new std::vector<CallMarker>{
        {"<｜tool▁calls▁begin｜>"},     {"<｜tool_calls_begin｜>"}, {"<｜tool calls begin｜>"},
        {"<｜tool\\_calls\\_begin｜>"}, {"<｜tool▁calls｜>"},
    };
    return *markers;
  }
  void Begin(int, DeltaBuilder&) override { NextCall(); }
  ScanResult Step(char c, DeltaBuilder& out) override {
    switch (state_) {
      case State::kName: {
        const ScanResult result = name_.Step(c);
        if (result != ScanResult::kDone) return result;
        if (!out.SetName(name_.name())) return ScanResult::kFail;
        Expect(State::kFence, "```json");
        return ScanResult::kConsumed;
      }
      case State::kArgs: {
        const ScanResult result = args_.Step(c, out);
        if (result != ScanResult::kDone && result != ScanResult::kDoneBefore) return result;
        out.EndCall();
        Expect(State::kCloseFence, "```");
        return result == ScanResult::kDone ? ScanResult::kConsumed : Step(c, out);
      }
      default:
        return StepLiteral(c, out);
    }
  }

 private:
  enum class State : uint8_t {
    kCallStart,
    kFunction,
    kSep,
    kName,
    kFence,
    kArgs,
    kCloseFence,
    kCallEnd
  };

  void NextCall() {
    state_ = State::kCallStart;
    literal_.Reset({kCallBegin, "function", kCallsEnd});
  }
  void Expect(State state, absl::string_view literal) {
    state_ = state;
    literal_.Reset({literal});
  }

  ScanResult StepLiteral(char c, DeltaBuilder& out) {
    if (state_ == State::kCallStart && literal_.at_start() && !IsJsonSpace(c)) {
      out.BeginCall();
    }
    const ScanResult result = literal_.StepAfterSpace(c);
    if (result != ScanResult::kDone) return result;
    switch (state_) {
      case State::kCallStart:
        if (literal_.matched() == kCallsEnd) return ScanResult::kDone;
        if (literal_.matched() == kCallBegin) {
          Expect(State::kFunction, "function");
        } else {
          Expect(State::kSep, "<｜tool▁sep｜>");
        }
        break;
      case State::kFunction:
        Expect(State::kSep, "<｜tool▁sep｜>");
        break;
      case State::kSep:
        state_ = State::kName;
        name_.Reset('\n');
        break;
      case State::kFence:
        state_ = State::kArgs;
        args_.Reset();
        break;
      case State::kCloseFence:
        Expect(State::kCallEnd, "<｜tool▁call▁end｜>");
        break;
      default:  // kCallEnd
        NextCall();
        break;
    }
    return ScanResult::kConsumed;
  }

  State state_ = State::kCallStart;
  LiteralMatcher literal_;
  NameReader name_;
  ArgsReader args_;
};

}  // namespace

std::unique_ptr<CallSyntax> NewDeepSeekR1Syntax() { return std::make_unique<DeepSeekR1Syntax>(); }

}  // namespace tandem::toolcall
