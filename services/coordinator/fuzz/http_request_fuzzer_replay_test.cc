// Runs the HTTP request parser's fuzz entry point as an ordinary test over the seed requests,
// hostile ones written by hand, and deterministic corruptions of both, so builds without
// libFuzzer check the same properties.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

#ifndef TANDEM_HTTP_SEEDS  // CMake gives the source folder; Bazel runs from the runfiles root
#define TANDEM_HTTP_SEEDS "services/coordinator/fuzz/http_seeds"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

const char* const kHostile[] = {
    "\x01POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    "\x02POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
    "\x03POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n",
    "\x04POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;a=b\r\nx\r\n0\r\nT: 1\r\n\r\n",
    "\x05GET / HTTP/1.1\r\nA: 1\r\n b\r\n\r\n",
    "\x06GET / HTTP/1.1\rX: 1\r\n\r\n",
    "\x00\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\n\r\n",
};

std::vector<fuzzing::Input> Seeds() {
  std::vector<fuzzing::Input> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(TANDEM_HTTP_SEEDS)) {
    std::ifstream in(entry.path(), std::ios::binary);
    fuzzing::Input input(1, 3);  // the first byte sets the piece size
    input.insert(input.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    seeds.push_back(std::move(input));
  }
  for (const char* request : kHostile) {
    const size_t length = std::char_traits<char>::length(request + 1) + 1;
    seeds.emplace_back(request, request + length);
  }
  return seeds;
}

TEST(HttpRequestFuzzerReplayTest, KeepsItsPropertiesOnSeedsHostileAndCorruptedRequests) {
  std::vector<fuzzing::Input> seeds = Seeds();
  ASSERT_GE(seeds.size(), 4u + std::size(kHostile)) << "seeds missing in " << TANDEM_HTTP_SEEDS;
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/300, /*max_truncated=*/400, /*rng_seed=*/33);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

}  // namespace
}  // namespace tandem
