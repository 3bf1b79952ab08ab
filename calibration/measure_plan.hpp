#pragma once
// What `trainsim calibrate --measure` measures on the local GPUs, decided without a GPU so
// that it can be tested anywhere: the GEMM shapes the model presets produce (forward and
// both backward GEMMs of every linear layer, tensor parallel 1–8, micro-batch 1–8) plus a
// grid around them, the attention problems, and the sizes of the memory-bound kernels,
// copies and collectives. Every list is ordered so that any prefix spreads over the whole
// range: the harness works under a time budget and stops a phase where the budget ends.
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "calibration/gemm_fit.hpp"

namespace trainsim::calibration {

struct AttentionProblem {
  std::int64_t batch = 1, heads = 1, sequence = 0, head_dim = 0;
  bool causal = false;
};

struct MeasurePlan {
  bool quick = false;
  std::vector<GemmShape> gemm_shapes;               // b = 1: dense layers
  // Weight gradients added into fp32 (m = output features, n = input features, k = tokens).
  std::vector<GemmShape> accumulate_shapes;
  std::vector<AttentionProblem> attention;          // the unfused path's kernels per problem
  std::vector<std::int64_t> memory_kernel_bytes;    // bytes each memory-bound kernel moves
  std::vector<std::int64_t> copy_bytes;             // host↔device, device↔device, peer
  std::vector<std::int64_t> collective_bytes;       // nccl-tests' size: 8 B … 4 GiB
  // Seconds each phase may take at most; a phase also stops at the whole run's deadline.
  double gemm_s_per_dtype = 0, accumulate_s = 0, attention_s = 0, memory_s = 0, copy_s = 0, collective_s = 0;
  double total_s = 0;
};

// The sequence lengths the presets were trained at (GPT-3: 2048, Brown et al. 2020; Llama 2:
// 4096, Touvron et al. 2023; Llama 3: 8192, Dubey et al. 2024).
inline constexpr std::int64_t kTrainingSequences[] = {2048, 4096, 8192};

// GEMM shapes of the linear layers (QKV, projection, MLP, logits) of `presets` under tensor
// parallel degrees in `tensor` (those the model's heads, groups and MLP allow), micro-batches
// in `micro_batches`, sequences in `sequences`; each forward (m, n, k) with its
// input-gradient (m, k, n) and weight-gradient (k, n, m) GEMMs. Sorted, without duplicates.
[[nodiscard]] std::vector<GemmShape> model_gemm_shapes(const std::vector<std::string>& presets,
                                                       const std::vector<std::int64_t>& tensor,
                                                       const std::vector<std::int64_t>& micro_batches,
                                                       const std::vector<std::int64_t>& sequences);

// The weight-gradient GEMMs of the same layers, as the accumulate phase measures them
// (calibration/accumulate_fit.hpp): output features × input features, reduced over the
// tokens, b = 1. Sorted, without duplicates.
[[nodiscard]] std::vector<GemmShape> model_weight_gradient_shapes(const std::vector<std::string>& presets,
                                                                  const std::vector<std::int64_t>& tensor,
                                                                  const std::vector<std::int64_t>& micro_batches,
                                                                  const std::vector<std::int64_t>& sequences);

// The harness's phases, in the order it runs them. A run may measure only some of them
// (`calibrate --measure --phases gemm-bf16,memory`): to re-measure what changed, or to keep a
// short lease on a GPU machine for what matters most.
enum class MeasurePhase {
  GemmBf16, GemmFp16, GemmFp8, GemmTf32, GemmAccumulate, AttentionFused, AttentionUnfused, Memory, Copies, Collectives
};
inline constexpr MeasurePhase kMeasurePhases[] = {
    MeasurePhase::GemmBf16,       MeasurePhase::GemmFp16,       MeasurePhase::GemmFp8,
    MeasurePhase::GemmTf32,       MeasurePhase::GemmAccumulate, MeasurePhase::AttentionFused,
    MeasurePhase::AttentionUnfused, MeasurePhase::Memory,       MeasurePhase::Copies,
    MeasurePhase::Collectives};
[[nodiscard]] const char* measure_phase_name(MeasurePhase phase);

// The set of phases a run measures; the default is every phase.
class MeasurePhases {
 public:
  MeasurePhases() : bits_((1u << std::size(kMeasurePhases)) - 1) {}
  [[nodiscard]] bool has(MeasurePhase p) const { return (bits_ >> static_cast<unsigned>(p)) & 1u; }
  // A comma-separated list of phase names ("gemm-bf16,attention-fused,memory"); an unknown
  // or repeated name, or an empty list, throws std::invalid_argument naming the valid names.
  [[nodiscard]] static MeasurePhases parse(const std::string& list);

 private:
  unsigned bits_;
};

// The whole plan. `quick`: bounded to 10 minutes on one GPU (fewer shapes and sizes, smaller
// phase budgets); otherwise every shape, with a 4-hour bound.
[[nodiscard]] MeasurePlan make_measure_plan(bool quick);

// Reorders `v` so that every prefix samples the whole list evenly (bit-reversed index order,
// a van der Corput sequence): cutting a phase short keeps small and large shapes alike.
template <typename T>
std::vector<T> spread_order(const std::vector<T>& v);

// At most `limit` elements of `v`, evenly spaced over it (with limit ≥ 2 the first and last are kept).
template <typename T>
std::vector<T> thin_out(const std::vector<T>& v, std::size_t limit);

// A deadline checked as the work goes: the harness asks before each measurement.
class TimeBudget {
 public:
  TimeBudget(double now_s, double seconds) : end_s_(now_s + seconds) {}
  [[nodiscard]] bool allows(double now_s, double next_cost_s = 0) const { return now_s + next_cost_s <= end_s_; }
  [[nodiscard]] double end_s() const { return end_s_; }
  // A budget for a phase: `seconds` from now, but not beyond this one.
  [[nodiscard]] TimeBudget phase(double now_s, double seconds) const {
    TimeBudget b(now_s, seconds);
    if (b.end_s_ > end_s_) b.end_s_ = end_s_;
    return b;
  }

 private:
  double end_s_;
};

}  // namespace trainsim::calibration

#include "calibration/detail/measure_plan_impl.hpp"
