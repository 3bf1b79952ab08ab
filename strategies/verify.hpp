#pragma once
// The Program verifier (LLVM's -verify-each): invariants every pass must keep. build_program
// runs it after each pass in debug builds and in tests (BuildOptions::verify).
#include <string>

#include "strategies/program.hpp"

namespace trainsim::strategies {

// The first broken invariant, described with where it is ("stage 1, chunk 0, backward
// item 7: …"); empty when the program is sound:
// * every compute item's segment index is in range of its role's segments;
// * per micro-batch template (a chunk's forward then backward), the bytes each tensor
//   class allocates equal the bytes it frees (recompute allocations included);
// * the chunks' layers, taken in virtual-stage order, are 0 … num_layers−1 once each, the
//   embedding on the first chunk and the head on the last;
// * collective bytes are finite and ≥ 0, compute fractions in (0, 1];
// * a schedule step depends only on earlier steps of its role.
std::string verify_program(const Program& program);

}  // namespace trainsim::strategies
