// Runs the chat-template fuzz entry point as an ordinary test over the shared real templates,
// deterministic hostile variants of them, and templates that once hung or exhausted memory
// (found by jinja_fuzzer), so builds without libFuzzer check the same properties.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

constexpr const char* kHostileTemplates[] = {
    "{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}"
    "{% endfor %}{{ ns.l|length }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}",
    "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s|tojson %}"
    "{% endfor %}{{ ns.s|length }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = [ns.s, ns.s] %}"
    "{% endfor %}{{ ns.s }}{{ ns.s|tojson }}{{ ns.s == ns.s }}",
    "{% set ns = namespace(s='abcdefgh') %}{% for i in range(30) %}"
    "{% set ns.s = ns.s|replace('a', ns.s) %}{% endfor %}",
    "{% set ns = namespace(a=1) %}{% set ns.x = ns %}{{ ns }}{{ ns|tojson }}",
    "{% set ns = namespace(v=1) %}{% for i in range(100000) %}{% set ns.v = [ns.v] %}"
    "{% endfor %}{{ ns.v }}",
    "{{ 'a\\nb'|indent(10000000000) }}{{ range(100)|join('x' * 10000000) }}",
};

std::vector<fuzzing::Input> SharedTemplates() {
  std::vector<fuzzing::Input> templates;
  const std::string dir = testing::SharedDir() + "/models/chat_templates";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jinja") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    templates.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return templates;
}

TEST(JinjaFuzzerReplayTest, KeepsItsPropertiesOnRealHostileAndBrokenTemplates) {
  std::vector<fuzzing::Input> seeds = SharedTemplates();
  ASSERT_GE(seeds.size(), 10u) << "shared chat templates missing (set TANDEM_SHARED)";
  for (const char* source : kHostileTemplates) {
    seeds.emplace_back(source, source + std::char_traits<char>::length(source));
  }
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/20, /*max_truncated=*/0, /*rng_seed=*/5);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

}  // namespace
}  // namespace tandem
