#include "calibration/memory_fit.hpp"

namespace trainsim::calibration {

MemoryFit fit_memory(const std::vector<SizedRecord>& rows, const std::string& origin, std::string& error,
                     std::vector<std::string>* skipped) {
  MemoryFit out;
  std::vector<SizedRecord> streaming;
  for (const auto& r : rows) {
    if (r.kind == kLaunchKernel) continue;
    if (static_cast<double>(r.bytes) < kMinStreamingBytes) {
      ++out.rows_below_l2;
      continue;
    }
    streaming.push_back(r);
  }
  if (streaming.empty()) {
    if (skipped != nullptr) {  // --measure: a quick run's sizes stop below the cut
      skipped->push_back("no memory-kernel rows with at least " +
                         std::to_string(static_cast<long>(kMinStreamingBytes / 1e6)) + " MB of traffic");
      return out;
    }
    error = origin + ": error: no memory-kernel rows with at least " + std::to_string(static_cast<long>(kMinStreamingBytes / 1e6)) +
            " MB of traffic (smaller ones can be served from L2); measure larger sizes";
    return {};
  }
  out.kernels = fit_copies(streaming, origin, error, skipped, "memory kernel");
  if (!error.empty()) return {};
  return out;
}

}  // namespace trainsim::calibration
