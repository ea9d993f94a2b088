// CHECK for programmer invariants only (never for request or file data, which get a Status).
#ifndef TANDEM_CORE_BASE_CHECK_H_
#define TANDEM_CORE_BASE_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define TANDEM_CHECK(condition)                                                          \
  do {                                                                                   \
    if (!(condition)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (false)

#endif  // TANDEM_CORE_BASE_CHECK_H_
