// What the kernels' AVX-512 code includes: <immintrin.h> (x86-64 only), with the warnings
// GCC 12's AVX-512 headers give (they initialise vectors as `__Y = __Y`, which
// -Wuninitialized flags) silenced for the including file, and the run-time check for the
// AVX-512 foundation instructions.
#ifndef TANDEM_CORE_KERNELS_AVX512_SUPPORT_H_
#define TANDEM_CORE_KERNELS_AVX512_SUPPORT_H_

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tandem::internal {

#if defined(__x86_64__)
// Whether this CPU runs AVX-512F (checked once).
inline bool HasAvx512F() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}
#endif

}  // namespace tandem::internal

#endif  // TANDEM_CORE_KERNELS_AVX512_SUPPORT_H_
