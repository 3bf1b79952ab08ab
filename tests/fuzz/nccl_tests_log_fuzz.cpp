// libFuzzer target: the nccl-tests log reader (text tables of every layout, and -J JSON).
// Any input must give a log or an error — never a crash, a sanitizer report or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "calibration/alpha_beta_fit.hpp"
#include "calibration/nccl_tests_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace trainsim::calibration;
  NcclTestsResult r = read_nccl_tests(text, "fuzz.log", "all_reduce");
  if (const auto* log = std::get_if<NcclTestsLog>(&r)) {
    // What calibrate does next: fit the rows.
    std::vector<SizeTime> points;
    for (const auto& row : log->rows) points.push_back({static_cast<double>(row.size_bytes), row.out_of_place.time_us * 1e-6});
    if (points.size() <= 64) (void)fit_alpha_beta(points).predict(1 << 20);
  }
  return 0;
}
