#include "core/toolcall/tool_call_id.h"

#include <random>

namespace tandem::toolcall {
namespace {

constexpr char kAlphanumerics[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr size_t kAlphanumericCount = sizeof(kAlphanumerics) - 1;

}  // namespace

std::string NewToolCallId(ToolCallFormat format, absl::BitGenRef gen) {
  const bool mistral = format == ToolCallFormat::kMistral;
  std::string id = mistral ? "" : "call_";
  const int length = mistral ? 9 : 24;
  // A standard distribution over BitGenRef (a URBG): no absl random library to link.
  std::uniform_int_distribution<size_t> pick(0, kAlphanumericCount - 1);
  for (int i = 0; i < length; ++i) id.push_back(kAlphanumerics[pick(gen)]);
  return id;
}

}  // namespace tandem::toolcall
