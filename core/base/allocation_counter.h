// Test-only: a binary that links this library has its global operator new/delete replaced by
// counting versions, so a test can prove a code path allocates nothing:
//
//   const int64_t before = tandem::testing::AllocationCount();
//   DecodeStep();
//   EXPECT_EQ(tandem::testing::AllocationCount() - before, 0);
#ifndef TANDEM_CORE_BASE_ALLOCATION_COUNTER_H_
#define TANDEM_CORE_BASE_ALLOCATION_COUNTER_H_

#include <cstdint>

namespace tandem::testing {

// Calls of operator new / new[] in this process so far.
int64_t AllocationCount();

}  // namespace tandem::testing

#endif  // TANDEM_CORE_BASE_ALLOCATION_COUNTER_H_
