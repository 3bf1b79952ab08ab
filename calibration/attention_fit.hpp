#pragma once
// Fused attention time by sequence length and head dimension. A forward + backward pass of
// b sequences × h heads does F FLOPs (counted as the flash-attention benchmark counts them:
// 3.5 × 4·s²·d per sequence and head, halved with the causal mask) and runs as tiles of
// queries, one thread-block loop per (sequence, head): each pair has a fixed cost (its
// prologue, its softmax statistics, the last partly-filled tiles), and the whole call one
// more. The model, linear in non-negative coefficients:
//   t = F / (efficiency(d, causal) · peak) + pair_s · b·h + call_s
// with one efficiency per head dimension and mask (the kernels differ: tile shapes follow
// the head dimension, the causal kernel skips tiles). Short sequences have many pairs of
// little work each, so efficiency rises with sequence length toward the plateau.
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::calibration {

struct AttentionMeasurement {
  std::int64_t batch = 1, heads = 1, sequence = 0, head_dim = 0;
  bool causal = false;
  double seconds = 0;
  [[nodiscard]] double flops() const;  // forward + backward, as above
};

struct AttentionModel {
  struct Plateau {
    std::int64_t head_dim = 0;
    bool causal = false;
    double seconds_per_flop = 0;
  };
  std::vector<Plateau> plateaus;  // one per (head_dim, causal) measured
  double pair_s = 0;
  double call_s = 0;
  // nullopt-like: 0 when the head dimension and mask were not measured.
  [[nodiscard]] double predict(const AttentionMeasurement& m) const;
};

// Fits the model; needs at least one measurement per (head_dim, causal) and 4 in all.
[[nodiscard]] AttentionModel fit_attention(const std::vector<AttentionMeasurement>& data);

// Error on held-back sequence lengths: every measurement at a sequence length in `held`
// is left out of the fit and predicted (whole sequence lengths, across head dimensions
// and masks). Relative errors in the order of the held-back measurements.
[[nodiscard]] std::vector<double> hold_out_sequences(const std::vector<AttentionMeasurement>& data,
                                                     const std::vector<std::int64_t>& held);

// Reads "batch,heads,sequence,head_dim,causal,flops_per_s" rows ('#' comments allowed).
// Errors name origin:line and the field; returns an empty string on success.
std::string read_attention_csv(const std::string& text, const std::string& origin, std::vector<AttentionMeasurement>& out);

}  // namespace trainsim::calibration
