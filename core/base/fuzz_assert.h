// A property check for fuzz targets: when `condition` fails, prints what broke and aborts, so
// libFuzzer records the input as a crash. Only for fuzzers (never on request or file data in
// the product, where errors are absl::Status).
#ifndef TANDEM_CORE_BASE_FUZZ_ASSERT_H_
#define TANDEM_CORE_BASE_FUZZ_ASSERT_H_

#include <cstdio>
#include <cstdlib>

#define TANDEM_FUZZ_ASSERT(condition, ...)                                                         \
  do {                                                                                             \
    if (!(condition)) {                                                                            \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n  ", __FILE__, __LINE__, #condition); \
      std::fprintf(stderr, __VA_ARGS__);                                                           \
      std::fprintf(stderr, "\n");                                                                  \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)

#endif  // TANDEM_CORE_BASE_FUZZ_ASSERT_H_
