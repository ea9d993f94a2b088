// Short vector kernels for attention over a KV cache: dot products and scaled accumulation
// against rows stored as f32, f16 or i8. Each has a scalar reference; the fast versions
// are chosen once at run time from the CPU.
//
// Every function's arithmetic depends only on n and its inputs (fixed lane assignment and
// reduction order), so results are the same wherever a row is used: alone or in a batch,
// on any thread.
#ifndef TANDEM_CORE_KERNELS_VECTOR_OPS_H_
#define TANDEM_CORE_KERNELS_VECTOR_OPS_H_

#include <cstdint>

namespace tandem {

// Σ a[i] · b[i].
float DotF32(const float* a, const float* b, int64_t n);
// Σ a[i] · half(b[i]).
float DotF16(const float* a, const uint16_t* b, int64_t n);
// Σ a[i] · b[i] (integers; the caller applies the row's scale).
float DotI8(const float* a, const int8_t* b, int64_t n);

// out[i] += w · v[i].
void AxpyF32(float w, const float* v, float* out, int64_t n);
void AxpyF16(float w, const uint16_t* v, float* out, int64_t n);
void AxpyI8(float w, const int8_t* v, float* out, int64_t n);

// out[i] = half(in[i]), rounding to nearest even.
void ConvertF32ToF16(const float* in, uint16_t* out, int64_t n);

// The scalar references (sequential sums in float).
namespace reference {
float DotF32(const float* a, const float* b, int64_t n);
float DotF16(const float* a, const uint16_t* b, int64_t n);
float DotI8(const float* a, const int8_t* b, int64_t n);
void AxpyF32(float w, const float* v, float* out, int64_t n);
void AxpyF16(float w, const uint16_t* v, float* out, int64_t n);
void AxpyI8(float w, const int8_t* v, float* out, int64_t n);
void ConvertF32ToF16(const float* in, uint16_t* out, int64_t n);
}  // namespace reference

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_VECTOR_OPS_H_
