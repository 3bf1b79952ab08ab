// The unfused attention path of Megatron-LM (before fused kernels): per (sample, head),
// S = Q·Kᵀ, P = softmax(S) (masked when causal), O = P·V forward; dV = Pᵀ·dO, dP = dO·Vᵀ,
// dS = softmax′(P, dP), dQ = dS·K, dK = dSᵀ·Q backward. cuDNN's fused scaled-dot-product
// attention is timed by sdpa_phase.cpp.
#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/phases.hpp"
#include "calibration/cuda/detail/lt_api.hpp"

#include <fmt/format.h>

#include <cmath>

namespace trainsim::calibration::cuda::detail {

std::vector<AttentionRecord> measure_attention(const Phase& phase, const std::vector<AttentionProblem>& problems) {
  std::vector<AttentionRecord> rows;
  cublasLtHandle_t handle = nullptr;
  TRAINSIM_CHECK(lt().cublasLtCreate(&handle));
  cudaStream_t stream = nullptr;
  TRAINSIM_CHECK(cudaStreamCreate(&stream));
  std::size_t too_large = 0, unsupported = 0, cut = 0;
  try {
    DeviceBuffer workspace(std::size_t{32} << 20);
    for (std::size_t i = 0; i < problems.size(); ++i) {
      if (!phase.budget.allows(now_s())) {
        cut = problems.size() - i;
        break;
      }
      const AttentionProblem& p = problems[i];
      const std::int64_t batch = p.batch * p.heads, s = p.sequence, d = p.head_dim;
      const auto qkv_bytes = static_cast<std::size_t>(batch * s * d) * 2;  // BF16
      const auto score_bytes = static_cast<std::size_t>(batch * s * s) * 2;
      // Q, K, V, O, dO, dQ, dK, dV and three score tensors (S and later dP; P; dS).
      if (8 * qkv_bytes + 3 * score_bytes > free_device_bytes() * 9 / 10) {
        ++too_large;
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
        ++unsupported;
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
  } catch (...) {
    cudaStreamDestroy(stream);
    lt().cublasLtDestroy(handle);
    throw;
  }
  cudaStreamDestroy(stream);
  lt().cublasLtDestroy(handle);
  if (too_large > 0) phase.note(fmt::format("attention: {} problems skipped: they do not fit in free memory", too_large));
  if (unsupported > 0) phase.note(fmt::format("attention: {} problems skipped: cuBLASLt offers no algorithm", unsupported));
  if (cut > 0) phase.note(fmt::format("attention: the time budget ended the phase; {} of {} problems not measured", cut, problems.size()));
  return rows;
}

}  // namespace trainsim::calibration::cuda::detail
