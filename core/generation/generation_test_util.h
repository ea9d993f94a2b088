// Test-only helpers shared by the session tests: shared models and golden.json.
#ifndef TANDEM_CORE_GENERATION_GENERATION_TEST_UTIL_H_
#define TANDEM_CORE_GENERATION_GENERATION_TEST_UTIL_H_

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/base/shared_data_test_util.h"
#include "core/decoder/model.h"
#include "core/generation/sampler.h"

namespace tandem::testing {

inline constexpr char kTargetPath[] = "models/stories260K/stories260K.gguf";
inline constexpr int32_t kEos = 2;

// A shared model in an activation precision, loaded once per test binary (nullptr if
// missing: the caller fails).
inline absl::StatusOr<const Model*> SharedModel(
    const std::string& relative, ActivationPrecision activations = ActivationPrecision::kInt16) {
  static auto* models = new std::vector<std::pair<std::string, std::unique_ptr<Model>>>();
  for (const auto& [path, model] : *models) {
    if (path == relative && model->activations() == activations) return model.get();
  }
  ASSIGN_OR_RETURN(std::string path, SharedFile(relative));
  ModelLoadOptions options;
  options.activations = activations;
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::Load(path, options));
  models->emplace_back(relative, std::move(model));
  return models->back().second.get();
}

struct GoldenCase {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> greedy_ids;
};

// The stories260K cases of golden.json (greedy continuations of 128 tokens).
inline absl::StatusOr<std::vector<GoldenCase>> StoriesGoldenCases() {
  ASSIGN_OR_RETURN(std::string path, SharedFile("models/golden.json"));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ASSIGN_OR_RETURN(json::Value golden, json::Parse(text.str()));
  const auto ids = [](const json::Value& array) {
    std::vector<int32_t> out;
    for (const json::Value& v : array.as_array()) out.push_back(static_cast<int32_t>(v.as_int()));
    return out;
  };
  std::vector<GoldenCase> cases;
  const json::Value* entry = golden.as_object().Find("stories260K");
  if (entry == nullptr) return absl::NotFoundError("golden.json has no stories260K entry");
  for (const json::Value& c : entry->as_object().Find("cases")->as_array()) {
    cases.push_back(
        {ids(*c.as_object().Find("prompt_ids")), ids(*c.as_object().Find("greedy_ids"))});
  }
  return cases;
}

// Issue #10, items 1 and 2: settings that used to abort (NaN weights from a 1e-38 penalty; an
// empty candidate set from min-p with top-p 1) and the other extremes Create accepts.
inline std::vector<std::pair<std::string, SamplerConfig>> ExtremeSamplerSettings() {
  const auto config = [](float temperature, float top_p, float min_p, float penalty) {
    SamplerConfig c;
    c.temperature = temperature;
    c.top_p = top_p;
    c.min_p = min_p;
    c.repetition_penalty = penalty;
    c.penalty_window = 64;
    c.seed = 7;
    return c;
  };
  return {{"penalty 1e-38", config(0.8f, 1, 0, 1e-38f)},
          {"top_p 1 with min_p 0.05", config(0.8f, 1, 0.05f, 1)},
          {"penalty 1e38", config(0.8f, 0.95f, 0.05f, 1e38f)},
          {"temperature 1e30", config(1e30f, 1, 0, 1)},
          {"temperature 1e-30 with penalty 1e-38", config(1e-30f, 1, 0.05f, 1e-38f)}};
}

}  // namespace tandem::testing

#endif  // TANDEM_CORE_GENERATION_GENERATION_TEST_UTIL_H_
