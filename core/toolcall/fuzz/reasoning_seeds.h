// Seed inputs for reasoning_splitter_fuzzer: a flags byte ('0': the output starts outside the
// reasoning, '1': inside; its other bits pick the chunk sizes) and a model output. Used by
// the seeder (make_reasoning_seeds) and the replay test.
#ifndef TANDEM_CORE_TOOLCALL_FUZZ_REASONING_SEEDS_H_
#define TANDEM_CORE_TOOLCALL_FUZZ_REASONING_SEEDS_H_

namespace tandem::fuzzing {

inline constexpr const char* kReasoningSeeds[] = {
    "0<think>\nLet me think.\n</think>\n\nThe answer is 4.",
    "1Okay, so the user asks 2+2.\n</think>\n\n4",
    "0  \n<think>x</think>y",
    "0Hello <think>x</think>",
    "0<think>unfinished thought  \n",
    "0<think></think>answer",
    "0<think>\n\n</think>\n\nanswer",
    "0<thin",
    "1<thin",
    "0< think>x",
    "0\n\n",
    "0",
    "1",
    "0<think>a </thinking> b</think> c",
    "0<think>a<</think>b",
    "0<think>a</think>b</think>c",
    "2<think>a </thi",
    "3\n<think>\nx</think>y",
    "5</think>answer",
    "7<think>\xE6\x97\xA5\xE6\x9C\xAC</think>\xE8\xAA\x9E",
    "9<think><think><<//think></think>\t \r\n<tool_call>{\"name\": \"f\"}</tool_call>",
    "1\xFF\xFE<\x7F/think></think>\x01",
};

}  // namespace tandem::fuzzing

#endif  // TANDEM_CORE_TOOLCALL_FUZZ_REASONING_SEEDS_H_
