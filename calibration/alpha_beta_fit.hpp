#pragma once
// α–β fits of transfer time against message size: t(S) = α + β·S on each of a few size
// ranges. One line rarely fits a collective from 8 B to GiBs, because NCCL switches
// algorithm and protocol with size (LL for small messages, Simple for large; tree or ring):
// each switch starts a new segment. This is SimGrid's piecewise factor table (FactorSet)
// in α–β form. Copies (host↔device, peer) use the same fit; they usually need one segment.
#include <vector>

namespace trainsim::calibration {

struct SizeTime {
  double bytes = 0;
  double seconds = 0;
};

struct AlphaBetaSegment {
  double min_bytes = 0;  // the sizes this segment was fitted on
  double max_bytes = 0;
  double alpha_s = 0;           // fixed cost per operation
  double beta_s_per_byte = 0;   // 1 / achieved bandwidth (0: the segment is latency only)
};

struct AlphaBetaFit {
  std::vector<AlphaBetaSegment> segments;  // ascending, not overlapping
  // Time at `bytes`: the segment whose range holds it; beyond the ends the nearest
  // segment; in a gap between two, the faster of the two lines, as NCCL's tuner picks the
  // algorithm/protocol of least predicted time (../shared/reference/nccl-and-hardware.md §1.1).
  [[nodiscard]] double predict(double bytes) const;
};

struct AlphaBetaOptions {
  // A new segment must lower the sum of squared relative residuals by this much. 0.002 is
  // one point off by 4.5 %, or a run of ten points off by 1.4 % each: larger than the
  // repeat-to-repeat scatter of nccl-tests timings (out-of-place vs in-place of one row
  // differ by ~1 % in the recorded logs), smaller than a protocol switch.
  double segment_penalty = 0.002;
  int min_points_per_segment = 3;  // a line through 3 points still has one degree of freedom
};

// Least squares on relative residuals (every size weighs the same whatever its time).
// Points of equal size are merged (geometric mean of their times); sizes ≤ 0 are ignored.
// Needs at least `min_points_per_segment` distinct sizes; otherwise returns no segments.
[[nodiscard]] AlphaBetaFit fit_alpha_beta(std::vector<SizeTime> points, const AlphaBetaOptions& options = {});

// Error on held-back sizes: every `stride`-th distinct size (from the second on, so that the
// ends stay in the fit) is left out of the fit and predicted. Whole sizes are held back.
struct HoldoutResult {
  std::vector<double> held_back_bytes;
  std::vector<double> relative_errors;  // |predicted − measured| / measured, same order
  double median = 0;
  double max = 0;
  AlphaBetaFit fit;  // fitted on the kept sizes
};
[[nodiscard]] HoldoutResult hold_out_sizes(std::vector<SizeTime> points, int stride, const AlphaBetaOptions& options = {});

double median_of(std::vector<double> v);

}  // namespace trainsim::calibration
