// Weight-gradient GEMMs adding into a buffer (cuBLASLt beta 1), the way Megatron-LM
// accumulates them into main_grad, against the same GEMM writing a fresh BF16 result: the
// table calibrate fits gemm_accumulate_bytes_per_s from (calibration/accumulate_fit.hpp).
#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/phases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace trainsim::calibration::cuda::detail {
namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;  // as gemm_phase.cpp
constexpr int kRounds = 3;

}  // namespace

std::vector<AccumulateMeasurement> measure_accumulating_gemms(const Phase& phase, const std::vector<GemmShape>& shapes) {
  std::vector<AccumulateMeasurement> rows;
  const LtSession session;
  cublasLtHandle_t handle = session.handle();
  cudaStream_t stream = session.stream();
  Skipped skipped;
  DeviceBuffer workspace(kWorkspaceBytes);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (!phase.budget.allows(now_s())) {
      skipped.cut = shapes.size() - i;
      break;
    }
    const GemmShape& s = shapes[i];
    // dW[m × n] = Xᵀ·dY over k tokens: A is k × m, B k × n (LtGemm's "TN" layout).
    const auto bytes_a = static_cast<std::size_t>(s.k * s.m) * 2, bytes_b = static_cast<std::size_t>(s.k * s.n) * 2;
    const auto bytes_d16 = static_cast<std::size_t>(s.m * s.n) * 2, bytes_d32 = static_cast<std::size_t>(s.m * s.n) * 4;
    if (bytes_a + bytes_b + bytes_d16 + bytes_d32 > free_device_bytes() * 9 / 10) {
      ++skipped.too_large;
      continue;
    }
    DeviceBuffer a(bytes_a), b(bytes_b), d16(bytes_d16), d32(bytes_d32);
    fill_uniform(Elem::BF16, a.get(), bytes_a / 2, 1, stream);
    fill_uniform(Elem::BF16, b.get(), bytes_b / 2, 2, stream);
    fill_uniform(Elem::BF16, d16.get(), bytes_d16 / 2, 3, stream);
    fill_uniform(Elem::F32, d32.get(), bytes_d32 / 4, 4, stream);
    const LtGemm plain(handle, GemmDtype::BF16, 1, s.m, s.n, s.k, workspace.get(), workspace.bytes());
    const LtGemm into_fp32(handle, GemmDtype::BF16, 1, s.m, s.n, s.k, workspace.get(), workspace.bytes(), Elem::F32);
    if (!plain.ok() || !into_fp32.ok()) {
      ++skipped.unsupported;
      continue;
    }
    AccumulateMeasurement r;
    r.shape = fmt::format("wgrad-{}x{}x{}", s.m, s.n, s.k);
    r.m = static_cast<double>(s.m);
    r.n = static_cast<double>(s.n);
    r.k = static_cast<double>(s.k);
    // The three ways in interleaved rounds, the fastest round of each: the difference is a
    // tenth of the GEMM, about what the SM clock drifts over a phase, so timing one way
    // after the other would measure the drift as much as the epilogue.
    const std::function<void()> ways[] = {
        [&] { plain.run(a.get(), b.get(), d16.get(), 1.0f, stream); },
        [&] { into_fp32.run(a.get(), b.get(), d32.get(), 1.0f, stream, 1.0f); },
        [&] { plain.run(a.get(), b.get(), d16.get(), 1.0f, stream, 1.0f); }};
    double best[3] = {0, 0, 0};
    for (int round = 0; round < kRounds; ++round)
      for (int w = 0; w < 3; ++w) {
        const double t = time_on_stream(stream, phase.target_s, ways[w]);
        best[w] = round == 0 ? t : std::min(best[w], t);
      }
    r.plain_s = best[0];
    r.fp32_accumulate_s = best[1];
    r.bf16_accumulate_s = best[2];
    rows.push_back(std::move(r));
  }
  skipped.note(phase, "gemm accumulate", "shapes", shapes.size());
  return rows;
}

}  // namespace trainsim::calibration::cuda::detail
