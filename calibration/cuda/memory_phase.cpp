// Achieved HBM bandwidth of the memory-bound kernels of a layer, and the cost of a kernel
// launch. Bytes are what each kernel must move (reads + writes of its tensors); the
// bandwidth is bytes / time.
#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/phases.hpp"

#include <fmt/format.h>

namespace trainsim::calibration::cuda::detail {
namespace {

// Rows of the norms: a hidden size the presets use (Llama 2 7B, GPT-3 2.7B: 4096).
constexpr std::int64_t kNormCols = 4096;
// Rows of the softmax: a sequence length the presets train at.
constexpr std::int64_t kSoftmaxCols = 2048;

}  // namespace

std::vector<SizedRecord> measure_memory_kernels(const Phase& phase, const std::vector<std::int64_t>& sizes) {
  std::vector<SizedRecord> rows;
  cudaStream_t stream = nullptr;
  TRAINSIM_CHECK(cudaStreamCreate(&stream));
  std::size_t cut = 0, too_large = 0;
  try {
    // Launch cost: back-to-back empty kernels; the stream's time per launch.
    rows.push_back({"launch", 0, time_on_stream(stream, phase.target_s, [&] { launch_empty(stream); })});
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (!phase.budget.allows(now_s())) {
        cut = sizes.size() - i;
        break;
      }
      // `bytes` is the traffic of one kernel; each kernel's tensors are sized to move it.
      const std::int64_t bytes = sizes[i];
      // The largest footprint below: Adam's four FP32 arrays for 7 bytes of traffic per 4.
      if (static_cast<std::size_t>(bytes) * 2 > free_device_bytes() * 9 / 10) {
        ++too_large;
        continue;
      }
      {  // residual add, BF16: 3 × 2 bytes per element
        const auto n = static_cast<std::size_t>(bytes / 6);
        DeviceBuffer a(2 * n), b(2 * n), c(2 * n);
        fill_uniform(Elem::BF16, a.get(), n, 1, stream);
        fill_uniform(Elem::BF16, b.get(), n, 2, stream);
        const double t = time_on_stream(stream, phase.target_s, [&] { elementwise_add(a.get(), b.get(), c.get(), n, stream); });
        rows.push_back({"elementwise", static_cast<std::int64_t>(6 * n), t});
      }
      {  // norms, BF16 in and out: 4 bytes per element (the FP32 weights are one row, cached)
        const std::int64_t r = bytes / (4 * kNormCols);
        if (r > 0) {
          const auto n = static_cast<std::size_t>(r * kNormCols);
          DeviceBuffer x(2 * n), y(2 * n), gamma(4 * kNormCols), beta(4 * kNormCols);
          fill_uniform(Elem::BF16, x.get(), n, 3, stream);
          fill_uniform(Elem::F32, gamma.get(), kNormCols, 4, stream);
          fill_uniform(Elem::F32, beta.get(), kNormCols, 5, stream);
          auto* g = static_cast<float*>(gamma.get());
          auto* be = static_cast<float*>(beta.get());
          const double ln = time_on_stream(stream, phase.target_s, [&] { layer_norm(x.get(), g, be, y.get(), r, kNormCols, stream); });
          const double rms = time_on_stream(stream, phase.target_s, [&] { rms_norm(x.get(), g, y.get(), r, kNormCols, stream); });
          rows.push_back({"layernorm", static_cast<std::int64_t>(4 * n), ln});
          rows.push_back({"rmsnorm", static_cast<std::int64_t>(4 * n), rms});
        }
      }
      {  // softmax over rows of scores, BF16 in and out (not causal: every element is read)
        const std::int64_t r = bytes / (4 * kSoftmaxCols);
        if (r > 0) {
          const auto n = static_cast<std::size_t>(r * kSoftmaxCols);
          DeviceBuffer x(2 * n), y(2 * n);
          fill_uniform(Elem::BF16, x.get(), n, 6, stream);
          const double t = time_on_stream(stream, phase.target_s, [&] {
            softmax_forward(x.get(), y.get(), r, kSoftmaxCols, false, 1.0f, stream);
          });
          rows.push_back({"softmax", static_cast<std::int64_t>(4 * n), t});
        }
      }
      {  // Adam, FP32 master weights and moments: reads p, g, m, v and writes p, m, v = 28 bytes per parameter
        const auto n = static_cast<std::size_t>(bytes / 28);
        DeviceBuffer p(4 * n), g(4 * n), m(4 * n), v(4 * n);
        for (DeviceBuffer* b : {&p, &g, &m, &v}) fill_uniform(Elem::F32, b->get(), n, 8, stream);
        TRAINSIM_CHECK(cudaMemsetAsync(v.get(), 0, 4 * n, stream));  // second moments start non-negative
        int step = 1;
        const double t = time_on_stream(stream, phase.target_s, [&] {
          adam_step(static_cast<float*>(p.get()), static_cast<const float*>(g.get()), static_cast<float*>(m.get()),
                    static_cast<float*>(v.get()), n, step++, stream);
        });
        rows.push_back({"adam", static_cast<std::int64_t>(28 * n), t});
      }
    }
    TRAINSIM_CHECK(cudaGetLastError());
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  cudaStreamDestroy(stream);
  if (too_large > 0) phase.note(fmt::format("memory kernels: {} sizes skipped: they do not fit in free memory", too_large));
  if (cut > 0) phase.note(fmt::format("memory kernels: the time budget ended the phase; {} of {} sizes not measured", cut, sizes.size()));
  return rows;
}

}  // namespace trainsim::calibration::cuda::detail
