// The unfused attention path of Megatron-LM (before fused kernels): per (sample, head),
// S = Q·Kᵀ, P = softmax(S) (masked when causal), O = P·V forward; dV = Pᵀ·dO, dP = dO·Vᵀ,
// dS = softmax′(P, dP), dQ = dS·K, dK = dSᵀ·Q backward. cuDNN's fused scaled-dot-product
// attention is timed by sdpa_phase.cpp.
#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/phases.hpp"

#include <fmt/format.h>

#include <cmath>

namespace trainsim::calibration::cuda::detail {

std::vector<AttentionRecord> measure_attention(const Phase& phase, const std::vector<AttentionProblem>& problems) {
  std::vector<AttentionRecord> rows;
  const LtSession session;
  cublasLtHandle_t handle = session.handle();
  cudaStream_t stream = session.stream();
  Skipped skipped;
  DeviceBuffer workspace(std::size_t{32} << 20);
  for (std::size_t i = 0; i < problems.size(); ++i) {
    if (!phase.budget.allows(now_s())) {
      skipped.cut = problems.size() - i;
      break;
    }
    const AttentionProblem& p = problems[i];
    const std::int64_t batch = p.batch * p.heads, s = p.sequence, d = p.head_dim;
    const auto qkv_bytes = static_cast<std::size_t>(batch * s * d) * 2;  // BF16
    const auto score_bytes = static_cast<std::size_t>(batch * s * s) * 2;
    // Q, K, V, O, dO, dQ, dK, dV and three score tensors (S and later dP; P; dS).
    if (8 * qkv_bytes + 3 * score_bytes > free_device_bytes() * 9 / 10) {
      ++skipped.too_large;
      continue;
    }
    DeviceBuffer q(qkv_bytes), k(qkv_bytes), v(qkv_bytes), o(qkv_bytes), d_o(qkv_bytes), dq(qkv_bytes),
        dk(qkv_bytes), dv(qkv_bytes), scores(score_bytes), probs(score_bytes), dscores(score_bytes);
    std::uint32_t seed = 7;
    for (DeviceBuffer* b : {&q, &k, &v, &d_o}) fill_uniform(Elem::BF16, b->get(), b->bytes() / 2, seed++, stream);
    LtGemm qk(handle, GemmDtype::BF16, batch, s, s, d, workspace.get(), workspace.bytes());   // S = Q·Kᵀ
    LtGemm pv(handle, GemmDtype::BF16, batch, s, d, s, workspace.get(), workspace.bytes());   // O = P·V and the
    // three backward GEMMs of the same shape (dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q)
    LtGemm dp(handle, GemmDtype::BF16, batch, s, s, d, workspace.get(), workspace.bytes());   // dP = dO·Vᵀ
    if (!qk.ok() || !pv.ok() || !dp.ok()) {
      ++skipped.unsupported;
      continue;
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const std::int64_t rows_total = batch * s;
    const double fwd = time_on_stream(stream, phase.target_s, [&] {
      qk.run(q.get(), k.get(), scores.get(), 1.0f, stream);
      softmax_forward(scores.get(), probs.get(), rows_total, s, p.causal, scale, stream);
      pv.run(probs.get(), v.get(), o.get(), 1.0f, stream);
    });
    const double bwd = time_on_stream(stream, phase.target_s, [&] {
      pv.run(probs.get(), d_o.get(), dv.get(), 1.0f, stream);
      dp.run(d_o.get(), v.get(), scores.get(), 1.0f, stream);
      softmax_backward(probs.get(), scores.get(), dscores.get(), rows_total, s, p.causal, stream);
      pv.run(dscores.get(), k.get(), dq.get(), scale, stream);
      pv.run(dscores.get(), q.get(), dk.get(), scale, stream);
    });
    rows.push_back({"unfused", "forward", p, fwd});
    rows.push_back({"unfused", "backward", p, bwd});
  }
  skipped.note(phase, "attention", "problems", problems.size());
  return rows;
}

}  // namespace trainsim::calibration::cuda::detail
