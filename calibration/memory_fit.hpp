#pragma once
// Achieved HBM bandwidth of streaming memory-bound kernels (copy, element-wise): the copy
// fit's α–β line per kernel, t(bytes) = α + bytes / bandwidth, on the sizes whose traffic
// cannot sit in L2. Input is the harness's memory.csv (calibration/measure_output.hpp:
// kernel,bytes,seconds; bytes = reads + writes of the kernel's tensors).
#include <string>
#include <vector>

#include "calibration/copy_fit.hpp"

namespace trainsim::calibration {

// Rows with less traffic than this are left out of the fit. Copy, element-wise, norm and
// softmax kernels touch each byte of their tensors once, so traffic is their footprint
// (Adam re-writes what it reads: footprint 16 of its 28 bytes per parameter); at twice the L2 of the largest-L2
// GPU the profiles model (50 MB: NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022;
// A100: 40 MB, NVIDIA A100 whitepaper) most of it cannot stay in L2 between repeats (for a
// copy, source and destination each exceed L2). Below it a repeated kernel is served partly
// from L2 and its time is not an HBM time. Fixed from the cache size, not from the data.
inline constexpr double kMinStreamingBytes = 2 * 50e6;

// memory.csv's kernel timing launches (bytes 0, seconds per empty launch); not fitted here.
inline constexpr const char* kLaunchKernel = "launch";

struct MemoryFit {
  std::vector<CopyKindFit> kernels;  // kinds in order of first appearance
  int rows_below_l2 = 0;             // rows left out by kMinStreamingBytes
};

// Errors (in `error`) name the origin; a kernel with fewer than kMinCopySizes fitted sizes is
// an error or, with `skipped`, described there.
[[nodiscard]] MemoryFit fit_memory(const std::vector<SizedRecord>& rows, const std::string& origin, std::string& error,
                                   std::vector<std::string>* skipped = nullptr);

}  // namespace trainsim::calibration
