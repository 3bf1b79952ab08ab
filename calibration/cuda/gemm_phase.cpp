#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/phases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

namespace trainsim::calibration::cuda::detail {
namespace {

// cuBLAS's recommended workspace on Hopper (cuBLAS documentation, cublasSetWorkspace: 32 MiB
// for sm_90); Ampere kernels use less.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

// Operand buffers that grow to the largest shape seen, filled once when they grow.
struct Operands {
  DeviceBuffer a, b, d;
  std::uint32_t seed = 1;
  void reserve(DeviceBuffer& buf, std::size_t bytes, Elem e, cudaStream_t stream) {
    if (buf.bytes() >= bytes) return;
    buf = DeviceBuffer();  // free first: the old and new buffer need not fit together
    buf = DeviceBuffer(bytes);
    fill_uniform(e, buf.get(), bytes / elem_bytes(e), seed++, stream);
  }
};

}  // namespace

void Phase::note(const std::string& text) const {
  if (notes) notes->push_back(text);
  if (progress) *progress << "  note: " << text << '\n';
}

void Skipped::note(const Phase& phase, const std::string& what, const char* things, std::size_t planned) const {
  if (too_large > 0) phase.note(fmt::format("{}: {} {} skipped: they do not fit in free memory", what, too_large, things));
  if (unsupported > 0) phase.note(fmt::format("{}: {} {} skipped: cuBLASLt offers no algorithm", what, unsupported, things));
  if (cut > 0)
    phase.note(fmt::format("{}: the time budget ended the phase; {} of {} {} not measured", what, cut, planned, things));
}

std::vector<GemmMeasurement> measure_gemms(const Phase& phase, GemmDtype dtype, const std::vector<GemmShape>& shapes) {
  std::vector<GemmMeasurement> rows;
  const LtSession session;
  cublasLtHandle_t handle = session.handle();
  cudaStream_t stream = session.stream();
  Skipped skipped;
  DeviceBuffer workspace(kWorkspaceBytes);
  Operands ops;
  const std::size_t in = elem_bytes(input_elem(dtype)), out = elem_bytes(output_elem(dtype));
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (!phase.budget.allows(now_s())) {
      skipped.cut = shapes.size() - i;
      break;
    }
    const GemmShape& s = shapes[i];
    const auto bytes_a = static_cast<std::size_t>(s.b * s.m * s.k) * in;
    const auto bytes_b = static_cast<std::size_t>(s.b * s.k * s.n) * in;
    const auto bytes_d = static_cast<std::size_t>(s.b * s.m * s.n) * out;
    const std::size_t grow = (bytes_a > ops.a.bytes() ? bytes_a : 0) + (bytes_b > ops.b.bytes() ? bytes_b : 0) +
                             (bytes_d > ops.d.bytes() ? bytes_d : 0);
    // Leave a tenth of the memory free for cuBLASLt and the driver.
    if (grow > 0 && grow > free_device_bytes() * 9 / 10) {
      ++skipped.too_large;
      continue;
    }
    ops.reserve(ops.a, bytes_a, input_elem(dtype), stream);
    ops.reserve(ops.b, bytes_b, input_elem(dtype), stream);
    ops.reserve(ops.d, bytes_d, output_elem(dtype), stream);
    LtGemm gemm(handle, dtype, s.b, s.m, s.n, s.k, workspace.get(), workspace.bytes());
    if (!gemm.ok()) {
      ++skipped.unsupported;
      continue;
    }
    const double seconds = time_on_stream(stream, phase.target_s, [&] {
      gemm.run(ops.a.get(), ops.b.get(), ops.d.get(), 1.0f, stream);
    });
    rows.push_back({s, seconds});
  }
  skipped.note(phase, std::string("gemm ") + dtype_name(dtype), "shapes", shapes.size());
  return rows;
}

}  // namespace trainsim::calibration::cuda::detail
