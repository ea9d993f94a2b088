// Pieces of worker and coordinator requests decoded from fuzz bytes, shared by the request
// fuzzers (attach_fuzzer, generate_fuzzer).
#ifndef TANDEM_WORKERS_FUZZ_FUZZ_REQUESTS_H_
#define TANDEM_WORKERS_FUZZ_FUZZ_REQUESTS_H_

#include <cstdint>

#include "core/base/fuzz_reader.h"
#include "tandem/v1/common.pb.h"

namespace tandem::fuzzing {

// stories260K's vocabulary size.
inline constexpr int32_t kFuzzVocab = 512;

// Mostly an id in the vocabulary, else an edge (-1, 512, INT32_MAX, ...).
int32_t ReadTokenId(FuzzReader& in);

// Sampling settings: one of the settings issue #10 reported (repetition_penalty 1e-38,
// top_p 1 with min_p 0.05, temperature 1e30, ...), or each field set or not, to an
// ordinary or an edge value.
void ReadSampling(FuzzReader& in, v1::SamplingParams* sampling);

// A grammar whose outputs are digits only: the fuzzers check what constrained workers draw.
inline constexpr char kDigitsGrammar[] = "root ::= [0-9]+";

// An output constraint: kDigitsGrammar, another valid grammar, a broken one, fuzz text as a
// grammar or a regex, json_object, a small or a malformed JSON Schema, or none set.
void ReadConstraint(FuzzReader& in, v1::Constraint* constraint);

}  // namespace tandem::fuzzing

#endif  // TANDEM_WORKERS_FUZZ_FUZZ_REQUESTS_H_
