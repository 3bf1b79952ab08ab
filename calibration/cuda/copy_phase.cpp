// Copy bandwidths as bandwidthTest and p2pBandwidthLatencyTest (CUDA samples) measure them:
// one cudaMemcpy*Async of `bytes` on a stream, timed by events; pageable copies through
// cudaMemcpyAsync from malloc'd memory, which the driver stages through its own pinned
// buffer. Device-to-device moves `bytes` (read once, written once).
#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/phases.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace trainsim::calibration::cuda::detail {
namespace {

struct HostFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};

}  // namespace

std::vector<SizedRecord> measure_copies(const Phase& phase, int device_count, const std::vector<std::int64_t>& sizes) {
  std::vector<SizedRecord> rows;
  std::int64_t largest = 0;
  for (auto s : sizes) largest = s > largest ? s : largest;
  const auto cap = static_cast<std::size_t>(largest);
  TRAINSIM_CHECK(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  TRAINSIM_CHECK(cudaStreamCreate(&stream));
  std::size_t cut = 0;
  std::vector<int> peers;
  try {
    void* pinned_raw = nullptr;
    TRAINSIM_CHECK(cudaMallocHost(&pinned_raw, cap));
    std::unique_ptr<void, HostFree> pinned(pinned_raw);
    std::unique_ptr<char[]> pageable(new char[cap]);
    std::memset(pinned.get(), 1, cap);  // touch every page
    std::memset(pageable.get(), 1, cap);
    DeviceBuffer src(cap), dst(cap);
    TRAINSIM_CHECK(cudaMemsetAsync(src.get(), 1, cap, stream));
    // Peers of device 0 that it can reach directly (NVLink or PCIe P2P).
    std::vector<DeviceBuffer> peer_bufs;
    for (int d = 1; d < device_count; ++d) {
      int can = 0;
      TRAINSIM_CHECK(cudaDeviceCanAccessPeer(&can, 0, d));
      if (!can) {
        phase.note(fmt::format("copies: GPU 0 cannot access GPU {} directly; no peer copy measured", d));
        continue;
      }
      const cudaError_t e = cudaDeviceEnablePeerAccess(d, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) TRAINSIM_CHECK(e);
      cudaGetLastError();  // clear "already enabled"
      TRAINSIM_CHECK(cudaSetDevice(d));
      peer_bufs.emplace_back(cap);
      TRAINSIM_CHECK(cudaSetDevice(0));
      peers.push_back(d);
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (!phase.budget.allows(now_s())) {
        cut = sizes.size() - i;
        break;
      }
      const auto n = static_cast<std::size_t>(sizes[i]);
      auto time = [&](const char* kind, void* to, const void* from, cudaMemcpyKind k) {
        const double t = time_on_stream(stream, phase.target_s, [&] { TRAINSIM_CHECK(cudaMemcpyAsync(to, from, n, k, stream)); });
        rows.push_back({kind, sizes[i], t});
      };
      time("h2d-pinned", dst.get(), pinned.get(), cudaMemcpyHostToDevice);
      time("d2h-pinned", pinned.get(), src.get(), cudaMemcpyDeviceToHost);
      time("h2d-pageable", dst.get(), pageable.get(), cudaMemcpyHostToDevice);
      time("d2h-pageable", pageable.get(), src.get(), cudaMemcpyDeviceToHost);
      time("d2d", dst.get(), src.get(), cudaMemcpyDeviceToDevice);
      for (std::size_t p = 0; p < peers.size(); ++p) {
        const double t = time_on_stream(stream, phase.target_s, [&] {
          TRAINSIM_CHECK(cudaMemcpyPeerAsync(peer_bufs[p].get(), peers[p], src.get(), 0, n, stream));
        });
        rows.push_back({fmt::format("peer-0-{}", peers[p]), sizes[i], t});
      }
    }
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  cudaStreamDestroy(stream);
  if (cut > 0) phase.note(fmt::format("copies: the time budget ended the phase; {} of {} sizes not measured", cut, sizes.size()));
  return rows;
}

}  // namespace trainsim::calibration::cuda::detail
