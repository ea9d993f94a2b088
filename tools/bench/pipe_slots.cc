// Which AVX-512 instructions share the vpdpbusd pipes: 16 independent vpdpbusd a loop
// iteration, alone and beside a few other instructions, in asm (so that the compiler neither
// spills the accumulators nor reorders anything). An instruction that costs nothing beside them
// runs on another pipe; one that adds about 1/16 of the loop per instance takes a vpdpbusd slot.
// Behind docs in README.md ("Activation precision", Speed). Not part of the build:
//   g++ -O2 -march=native -o /tmp/pipe_slots tools/bench/pipe_slots.cc && /tmp/pipe_slots
// (on an AVX-512 VNNI CPU; run it in its own autogroup on a quiet machine).
#include <chrono>
#include <cstdio>

namespace {

// 16 vpdpbusd into zmm0..zmm15 from zmm16, zmm17.
#define TANDEM_DP16                                                           \
  "vpdpbusd %%zmm16, %%zmm17, %%zmm0\n vpdpbusd %%zmm16, %%zmm17, %%zmm1\n"   \
  "vpdpbusd %%zmm16, %%zmm17, %%zmm2\n vpdpbusd %%zmm16, %%zmm17, %%zmm3\n"   \
  "vpdpbusd %%zmm16, %%zmm17, %%zmm4\n vpdpbusd %%zmm16, %%zmm17, %%zmm5\n"   \
  "vpdpbusd %%zmm16, %%zmm17, %%zmm6\n vpdpbusd %%zmm16, %%zmm17, %%zmm7\n"   \
  "vpdpbusd %%zmm16, %%zmm17, %%zmm8\n vpdpbusd %%zmm16, %%zmm17, %%zmm9\n"   \
  "vpdpbusd %%zmm16, %%zmm17, %%zmm10\n vpdpbusd %%zmm16, %%zmm17, %%zmm11\n" \
  "vpdpbusd %%zmm16, %%zmm17, %%zmm12\n vpdpbusd %%zmm16, %%zmm17, %%zmm13\n" \
  "vpdpbusd %%zmm16, %%zmm17, %%zmm14\n vpdpbusd %%zmm16, %%zmm17, %%zmm15\n"

alignas(64) int scratch[256];

#define TANDEM_LOOP(extra)                                                                         \
  asm volatile("1:\n" TANDEM_DP16 extra "dec %0\n jnz 1b\n"                                        \
               : "+r"(n)                                                                           \
               : "r"(scratch)                                                                      \
               : "memory", "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", \
                 "zmm9", "zmm10", "zmm11", "zmm12", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17",   \
                 "zmm18", "zmm19", "zmm20", "zmm21", "zmm28", "zmm29")

void Alone(long n) { TANDEM_LOOP(""); }
void Convert(long n) { TANDEM_LOOP("vcvtdq2ps %%zmm1, %%zmm18\n vcvtdq2ps %%zmm2, %%zmm19\n"); }
void Multiply(long n) {
  TANDEM_LOOP("vmulps %%zmm16, %%zmm17, %%zmm20\n vmulps %%zmm16, %%zmm17, %%zmm21\n");
}
void MultiplyAdd(long n) {
  TANDEM_LOOP("vfmadd231ps %%zmm16, %%zmm17, %%zmm28\n vfmadd231ps %%zmm16, %%zmm17, %%zmm29\n");
}
void MulLo32(long n) {
  TANDEM_LOOP("vpmulld %%zmm1, %%zmm17, %%zmm18\n vpmulld %%zmm2, %%zmm17, %%zmm19\n");
}
void AddInt(long n) {
  TANDEM_LOOP("vpaddd %%zmm1, %%zmm17, %%zmm18\n vpaddd %%zmm2, %%zmm17, %%zmm19\n");
}
void Dpwssd(long n) {
  TANDEM_LOOP("vpdpwssd %%zmm16, %%zmm17, %%zmm28\n vpdpwssd %%zmm16, %%zmm17, %%zmm29\n");
}
void Logic(long n) {
  TANDEM_LOOP("vpandd %%zmm16, %%zmm17, %%zmm18\n vpternlogd $0xF8, %%zmm16, %%zmm17, %%zmm19\n");
}
void Shift(long n) { TANDEM_LOOP("vpsrlw $4, %%zmm17, %%zmm18\n vpslld $3, %%zmm17, %%zmm19\n"); }
void Shuffle(long n) {
  TANDEM_LOOP("vpshufb %%zmm16, %%zmm17, %%zmm18\n vpshufb %%zmm16, %%zmm17, %%zmm19\n");
}
void Broadcast(long n) {
  TANDEM_LOOP("vpbroadcastd (%1), %%zmm18\n vpbroadcastd 4(%1), %%zmm19\n");
}
// The K-quant kernel's float step for 8 vpdpbusd: convert, scale product, multiply-add, the
// min's multiply-add; twice per 16.
void FloatStep(long n) {
  TANDEM_LOOP(
      "vcvtdq2ps %%zmm1, %%zmm18\n vmulps %%zmm16, %%zmm17, %%zmm20\n"
      "vfmadd231ps %%zmm18, %%zmm20, %%zmm28\n vfnmadd231ps %%zmm17, %%zmm16, %%zmm29\n"
      "vcvtdq2ps %%zmm2, %%zmm19\n vmulps %%zmm16, %%zmm17, %%zmm21\n"
      "vfmadd231ps %%zmm19, %%zmm21, %%zmm28\n vfnmadd231ps %%zmm17, %%zmm16, %%zmm29\n");
}

double NsPerDpbusd(void (*loop)(long)) {
  constexpr long kIterations = 10'000'000;
  loop(1000);
  const auto start = std::chrono::steady_clock::now();
  loop(kIterations);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / (kIterations * 16.0) * 1e9;
}

}  // namespace

int main() {
  struct Case {
    const char* name;
    void (*loop)(long);
  };
  const Case cases[] = {{"vpdpbusd alone", Alone},
                        {"+ 2 vcvtdq2ps", Convert},
                        {"+ 2 vmulps", Multiply},
                        {"+ 2 vfmadd231ps", MultiplyAdd},
                        {"+ 2 vpmulld", MulLo32},
                        {"+ 2 vpaddd", AddInt},
                        {"+ 2 vpdpwssd", Dpwssd},
                        {"+ vpandd, vpternlogd", Logic},
                        {"+ vpsrlw, vpslld", Shift},
                        {"+ 2 vpshufb", Shuffle},
                        {"+ 2 vpbroadcastd from memory", Broadcast},
                        {"+ 2 K-quant float steps", FloatStep}};
  const double alone = NsPerDpbusd(Alone);
  std::printf("%-32s %8s %14s\n", "16 vpdpbusd", "ns each", "extra slots");
  for (const Case& c : cases) {
    const double ns = NsPerDpbusd(c.loop);
    std::printf("%-32s %8.4f %14.2f\n", c.name, ns, (ns - alone) / alone * 16);
  }
}
