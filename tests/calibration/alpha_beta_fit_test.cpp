// α–β fits of recorded nccl-tests runs: held-back message sizes, and the same fit from the
// three log formats.
#include "calibration/alpha_beta_fit.hpp"

#include <gtest/gtest.h>

#include <cstdio>

#include "calibration/nccl_tests_log.hpp"
#include "tests/calibration/test_data.hpp"

namespace trainsim::calibration {
namespace {

std::vector<SizeTime> out_of_place_points(const std::string& file, std::string_view collective = "all_reduce") {
  NcclTestsResult r = read_nccl_tests(testing::read_data(file), file, collective);
  if (auto* e = std::get_if<LogError>(&r)) {
    ADD_FAILURE() << to_string(*e);
    return {};
  }
  std::vector<SizeTime> points;
  for (const auto& row : std::get<NcclTestsLog>(r).rows)
    points.push_back({static_cast<double>(row.size_bytes), row.out_of_place.time_us * 1e-6});
  return points;
}

// Exact: a line through three points, and two lines with a switch between them.
TEST(AlphaBetaFit, RecoversLinesExactly) {
  std::vector<SizeTime> p;
  for (double s : {1e3, 2e3, 4e3, 8e3}) p.push_back({s, 5e-6 + s / 10e9});        // 5 µs, 10 GB/s
  for (double s : {1e6, 2e6, 4e6, 8e6}) p.push_back({s, 20e-6 + s / 100e9});      // 20 µs, 100 GB/s
  AlphaBetaFit f = fit_alpha_beta(p);
  ASSERT_EQ(f.segments.size(), 2u);
  EXPECT_NEAR(f.segments[0].alpha_s, 5e-6, 1e-12);
  EXPECT_NEAR(1 / f.segments[0].beta_s_per_byte, 10e9, 1e3);
  EXPECT_NEAR(f.segments[1].alpha_s, 20e-6, 1e-12);
  EXPECT_NEAR(1 / f.segments[1].beta_s_per_byte, 100e9, 1e3);
  // In the gap (8 kB … 1 MB) the faster line wins: at 500 kB, 5 µs + 50 µs vs 20 µs + 5 µs.
  EXPECT_NEAR(f.predict(5e5), 25e-6, 1e-12);
}

// Acceptance (issue 10): the α–β fit of an ingested nccl-tests log predicts held-back
// message sizes within 5 %. 16 × H100 on 2 nodes, all_reduce 8 B … 8 GiB (recorded run;
// tests/data/calibration/README.md); every third size held back.
TEST(AlphaBetaFit, HeldBackSizesOfARecordedAllReduce) {
  auto points = out_of_place_points("nccl-tests/h100-16gpu-all_reduce.txt");
  ASSERT_EQ(points.size(), 31u);
  HoldoutResult r = hold_out_sizes(points, 3);
  for (std::size_t i = 0; i < r.held_back_bytes.size(); ++i)
    std::printf("held back %12.0f B: error %.2f %%\n", r.held_back_bytes[i], 100 * r.relative_errors[i]);
  std::printf("segments %zu, median %.2f %%, max %.2f %%\n", r.fit.segments.size(), 100 * r.median, 100 * r.max);
  EXPECT_EQ(r.held_back_bytes.size(), 10u);
  EXPECT_LE(r.median, 0.05);
}

// Acceptance: the three formats of one run give the same fit, segment for segment.
TEST(AlphaBetaFit, ThreeFormatsGiveTheSameFit) {
  AlphaBetaFit text = fit_alpha_beta(out_of_place_points("nccl-tests/h100-16gpu-all_reduce.txt"));
  AlphaBetaFit older = fit_alpha_beta(out_of_place_points("nccl-tests/h100-16gpu-all_reduce-older.txt"));
  AlphaBetaFit json = fit_alpha_beta(out_of_place_points("nccl-tests/h100-16gpu-all_reduce.json", {}));
  ASSERT_FALSE(text.segments.empty());
  for (const AlphaBetaFit* other : {&older, &json}) {
    ASSERT_EQ(other->segments.size(), text.segments.size());
    for (std::size_t i = 0; i < text.segments.size(); ++i) {
      EXPECT_EQ(other->segments[i].min_bytes, text.segments[i].min_bytes);
      EXPECT_EQ(other->segments[i].alpha_s, text.segments[i].alpha_s);
      EXPECT_EQ(other->segments[i].beta_s_per_byte, text.segments[i].beta_s_per_byte);
    }
  }
}

}  // namespace
}  // namespace trainsim::calibration
