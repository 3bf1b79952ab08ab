#pragma once
// The harness's attention.csv read back (calibration/measure_output.hpp writes it), and its
// fused rows turned into the measurements the attention fit reads (attention_fit.hpp).
// Each problem is timed as two rows, the forward and the backward pass; the fit's unit is
// one forward + backward call (the flash-attention benchmark's), so a fused problem's two
// rows become one measurement of their summed time. The unfused path's rows are counted
// and left out: the cost model prices that path from the GEMM curve and the memory-bound
// efficiency (its strided-batched GEMMs and softmax kernels), which their own measurements
// fit; no profile constant belongs to the unfused path alone.
#include <cstddef>
#include <string>
#include <vector>

#include "calibration/attention_fit.hpp"
#include "calibration/measure_output.hpp"

namespace trainsim::calibration {

inline constexpr const char* kAttentionRecordsHeader = "path,pass,causal,batch,heads,sequence,head_dim,seconds";
// The paths the harness times: cuBLASLt batched GEMMs with its own softmax kernels, and
// cuDNN's fused scaled-dot-product attention (calibration/cuda/sdpa_phase.cpp).
inline constexpr const char* kUnfusedAttentionPath = "unfused";
inline constexpr const char* kFusedAttentionPath = "cudnn-sdpa";

// Reads attention.csv rows ('#' comments allowed). Errors name origin:line and the field;
// a problem timed twice in the same path and pass is an error. "" on success.
[[nodiscard]] std::string read_attention_records(const std::string& text, const std::string& origin,
                                                 std::vector<AttentionRecord>& out);

struct FusedAttention {
  std::vector<AttentionMeasurement> measurements;  // one per problem with both passes, in file order
  std::size_t unfused_rows = 0;                     // rows of the unfused path (not fitted)
  std::size_t unpaired_rows = 0;                    // fused rows whose other pass is missing (a budget cut)
};

[[nodiscard]] FusedAttention fused_attention_measurements(const std::vector<AttentionRecord>& rows);

}  // namespace trainsim::calibration
