#include "calibration/profile_fit.hpp"

#include "calibration/alpha_beta_fit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>

namespace trainsim::calibration {
namespace {

// Distinct sizes one log may have: the segmented fit is cubic in them, and real sweeps
// (factor 2 from 8 B to 16 GiB) have about 32.
constexpr std::size_t kMaxSizes = 512;

std::vector<SizeTime> points_of(const NcclTestsLog& log) {
  std::vector<SizeTime> p;
  for (const auto& row : log.rows) {
    if (row.size_bytes > 0 && row.out_of_place.time_us > 0)
      p.push_back({static_cast<double>(row.size_bytes), row.out_of_place.time_us * 1e-6});
  }
  return p;
}

std::string percent(double x) { return fmt::format("{:.2f} %", 100 * x); }

// The fused-attention curve (batched_gemm_efficiency): the attention model fitted to the
// measurements, with the error on held-back sequence lengths, evaluated per (sequence,
// head) at head dimension 128 non-causal (the presets' usual head size; the curve's unit)
// or, without those, the first measured head dimension and mask, at the sequence lengths
// the measurements reach. The fitted per-call cost is spread over the (sequence, head)
// pairs of the problem measured at that length: the harness and the flash-attention
// benchmark hold the tokens of a call fixed (16k), so the fit cannot tell a cost per call
// from one per token, and the curve gives the time as it was measured. (It is far more than
// a launch: 335 us per call on the H100, the backward's pre-pass, dQ conversion and
// accumulator passes among it.)
std::string fit_attention_into(const CalibrationInput& in, hardware::GpuProfile& p, std::string& r) {
  std::vector<std::int64_t> sequences;
  for (const auto& m : in.attention)
    if (std::find(sequences.begin(), sequences.end(), m.sequence) == sequences.end()) sequences.push_back(m.sequence);
  std::sort(sequences.begin(), sequences.end());
  if (in.attention.size() < 8 || sequences.size() < 4) {
    return in.attention_origin + ": error: " + std::to_string(in.attention.size()) + " attention measurements over " +
           std::to_string(sequences.size()) +
           " sequence lengths; the fit with held-back sequence lengths needs at least 8 over 4";
  }
  // Every other interior sequence length held back (whole lengths, every head dimension).
  std::vector<std::int64_t> held;
  for (std::size_t i = 1; i + 1 < sequences.size(); i += 2) held.push_back(sequences[i]);
  const std::vector<double> errors = hold_out_sequences(in.attention, held);
  const AttentionModel m = fit_attention(in.attention);
  const double peak = in.base.peak_bf16_flops().value();
  AttentionModel::Plateau chosen = m.plateaus.front();
  for (const auto& pl : m.plateaus)
    if (pl.head_dim == 128 && !pl.causal) chosen = pl;
  const std::string held_text = fmt::format(
      "sequence lengths {} held back ({} measurements): median error {}, max {}", fmt::join(held, ", "), errors.size(),
      percent(median_of(errors)), percent(*std::max_element(errors.begin(), errors.end())));
  // The (sequence, head) pairs of the call measured at length s with this head dimension
  // and mask; for a length measured only otherwise, the calls' usual size in elements
  // (batch · heads · sequence · head_dim) over s · head_dim.
  std::vector<double> call_elements;
  for (const auto& meas : in.attention)
    call_elements.push_back(static_cast<double>(meas.batch * meas.heads * meas.sequence * meas.head_dim));
  const double usual_elements = median_of(call_elements);
  auto pairs_at = [&](std::int64_t s, const AttentionModel::Plateau& plateau) {
    for (const auto& meas : in.attention)
      if (meas.sequence == s && meas.head_dim == plateau.head_dim && meas.causal == plateau.causal)
        return static_cast<double>(meas.batch * meas.heads);
    return std::max(1.0, usual_elements / (static_cast<double>(s) * static_cast<double>(plateau.head_dim)));
  };
  // x is the problem's non-causal FLOPs (the curves' unit); a causal kernel executes half.
  auto write_curve = [&](hardware::EfficiencyCurve* curve, const AttentionModel::Plateau& plateau) {
    curve->Clear();
    curve->set_variable("fwd_bwd_flops_per_sequence_head");
    for (std::int64_t s : sequences) {
      const double x = 3.5 * 4.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(plateau.head_dim);
      const double executed = plateau.causal ? x / 2 : x;
      const double per_pair_s = executed * plateau.seconds_per_flop + m.pair_s + m.call_s / pairs_at(s, plateau);
      auto* pt = curve->add_point();
      pt->set_x(x);
      pt->set_efficiency(std::min(1.0, executed / (peak * per_pair_s)));
    }
    curve->set_source(fmt::format("trainsim calibrate: attention model fitted to {} ({} measurements; head_dim {}{}), "
                                  "evaluated per (sequence, head) at the measured sequence lengths, the fitted "
                                  "per-call cost of {:.1f} us spread over the pairs of the call measured there; {}",
                                  in.attention_origin, in.attention.size(), plateau.head_dim,
                                  plateau.causal ? " causal" : "", m.call_s * 1e6, held_text));
  };
  write_curve(p.mutable_batched_gemm_efficiency(), chosen);
  // The causal curve where the causal kernel of the same head dimension was measured.
  p.clear_causal_attention_efficiency();
  for (const auto& pl : m.plateaus)
    if (!chosen.causal && pl.causal && pl.head_dim == chosen.head_dim)
      write_curve(p.mutable_causal_attention_efficiency(), pl);
  r += fmt::format("attention: {} measurements, {} head-dimension/mask plateaus, per (sequence, head) {:.2f} us, per "
                   "call {:.1f} us\n",
                   in.attention.size(), m.plateaus.size(), m.pair_s * 1e6, m.call_s * 1e6);
  for (const auto& pl : m.plateaus) {
    r += fmt::format("  head_dim {:>3} {:<10} plateau {:.1f} TFLOP/s ({:.3f} of peak)\n", pl.head_dim,
                     pl.causal ? "causal" : "non-causal", 1e-12 / pl.seconds_per_flop, 1 / (pl.seconds_per_flop * peak));
  }
  r += "  " + held_text + "\n";
  return "";
}

// Copies: an α–β line per kind with the error on held-back sizes. The pinned host copies
// set pcie_bytes_per_s, the one host-copy bandwidth the simulator reads
// (hardware/profile.proto: "pinned host<->device, per direction"; hardware/cluster.cpp's
// host links): with both directions measured, the slower, since either direction of an
// offload or reload runs at the one rate the profile holds.
std::string fit_copies_into(const CalibrationInput& in, hardware::GpuProfile& p, std::string& r) {
  std::string error;
  std::vector<std::string> skipped;
  const std::vector<CopyKindFit> fits =
      fit_copies(in.copies, in.copies_origin, error, in.skip_short_copy_kinds ? &skipped : nullptr);
  if (!error.empty()) return error;
  const CopyKindFit* pinned = nullptr;
  std::string held_text;
  r += fmt::format("copies from {}: {} kind{}, t = alpha + bytes / bandwidth\n", in.copies_origin, fits.size(),
                   fits.size() == 1 ? "" : "s");
  for (const auto& why : skipped) r += "  not fitted: " + why + "\n";
  for (const auto& k : fits) {
    std::vector<double> held_bytes = k.held.held_back_bytes;
    const std::string held = fmt::format("sizes {} B held back: median error {}, max {}", fmt::join(held_bytes, ", "),
                                         percent(k.held.median), percent(k.held.max));
    r += fmt::format("  {:<14} {:>2} sizes, alpha {:.2f} us, bandwidth {:.3f} GB/s; {}\n", k.kind, k.sizes,
                     k.alpha_s * 1e6, k.bytes_per_s * 1e-9, held);
    if (k.kind == "h2d-pinned" || k.kind == "d2h-pinned") {
      if (!(k.bytes_per_s > 0))
        return in.copies_origin + ": error: copy kind \"" + k.kind +
               "\": the fitted time does not grow with size (bandwidth unbounded); measure larger copies";
      if (pinned == nullptr || k.bytes_per_s < pinned->bytes_per_s) {
        pinned = &k;
        held_text = held;
      }
    }
  }
  if (pinned == nullptr) {
    r += "  no pinned host copy (h2d-pinned, d2h-pinned) measured: pcie_bytes_per_s left as the base profile's\n";
    return "";
  }
  p.mutable_pcie_bytes_per_s()->set_value(pinned->bytes_per_s);
  p.mutable_pcie_bytes_per_s()->set_source(
      fmt::format("trainsim calibrate: {} alpha-beta fit to {} ({} sizes, alpha {:.2f} us); {}", pinned->kind,
                  in.copies_origin, pinned->sizes, pinned->alpha_s * 1e6, held_text));
  r += fmt::format("  pcie_bytes_per_s = {:.4g} (from {})\n", pinned->bytes_per_s, pinned->kind);
  return "";
}

// Memory-bound kernels: an α–β line per kernel on the sizes above L2 (memory_fit.hpp). The
// streaming one — "elementwise" (the harness's residual add), else "copy" — sets
// memory_efficiency, the fraction of hbm_bytes_per_s the cost model gives every
// memory-bound kernel (hardware/cost_model.cpp).
std::string fit_memory_into(const CalibrationInput& in, hardware::GpuProfile& p, std::string& r) {
  std::string error;
  std::vector<std::string> skipped;
  const MemoryFit fit =
      fit_memory(in.memory, in.memory_origin, error, in.skip_short_copy_kinds ? &skipped : nullptr);
  if (!error.empty()) return error;
  r += fmt::format("memory-bound kernels from {}: {} kernel{}, t = alpha + bytes / bandwidth, on sizes of at least "
                   "{:.0f} MB of traffic ({} smaller row{} left out: L2)\n",
                   in.memory_origin, fit.kernels.size(), fit.kernels.size() == 1 ? "" : "s", kMinStreamingBytes / 1e6,
                   fit.rows_below_l2, fit.rows_below_l2 == 1 ? "" : "s");
  for (const auto& why : skipped) r += "  not fitted: " + why + "\n";
  const CopyKindFit* streaming = nullptr;
  std::string held_text;
  for (const auto& k : fit.kernels) {
    const std::string held = fmt::format("sizes {} B held back: median error {}, max {}",
                                         fmt::join(k.held.held_back_bytes, ", "), percent(k.held.median),
                                         percent(k.held.max));
    r += fmt::format("  {:<14} {:>2} sizes, alpha {:.2f} us, bandwidth {:.3f} GB/s; {}\n", k.kind, k.sizes,
                     k.alpha_s * 1e6, k.bytes_per_s * 1e-9, held);
    const bool preferred = k.kind == "elementwise" || (k.kind == "copy" && streaming == nullptr);
    if (preferred && (streaming == nullptr || streaming->kind != "elementwise")) {
      streaming = &k;
      held_text = held;
    }
  }
  if (streaming == nullptr) {
    r += "  no streaming kernel (elementwise, copy) fitted: memory_efficiency left as the base profile's\n";
    return "";
  }
  if (!(streaming->bytes_per_s > 0))
    return in.memory_origin + ": error: memory kernel \"" + streaming->kind +
           "\": the fitted time does not grow with size (bandwidth unbounded); measure larger sizes";
  const double hbm = p.hbm_bytes_per_s().value();
  const double efficiency = streaming->bytes_per_s / hbm;
  if (!(hbm > 0) || efficiency > 1)
    return in.memory_origin + ": error: memory kernel \"" + streaming->kind + "\": fitted bandwidth " +
           fmt::format("{:.4g}", streaming->bytes_per_s) + " B/s exceeds the base profile's hbm_bytes_per_s " +
           fmt::format("{:.4g}", hbm) + "; calibrate against the profile of the measured GPU";
  p.mutable_memory_efficiency()->set_value(efficiency);
  p.mutable_memory_efficiency()->set_source(fmt::format(
      "trainsim calibrate: {} alpha-beta fit to {} ({} sizes of at least {:.0f} MB traffic, alpha {:.2f} us, "
      "{:.4g} B/s over hbm_bytes_per_s {:.4g}); {}",
      streaming->kind, in.memory_origin, streaming->sizes, kMinStreamingBytes / 1e6, streaming->alpha_s * 1e6,
      streaming->bytes_per_s, hbm, held_text));
  r += fmt::format("  memory_efficiency = {:.4f} (from {}: {:.4g} B/s of {:.4g})\n", efficiency, streaming->kind,
                   streaming->bytes_per_s, hbm);
  return "";
}

// Weight-gradient GEMMs adding into an fp32 buffer against writing BF16 (accumulate_fit.hpp):
// one rate for the extra epilogue bytes sets gemm_accumulate_bytes_per_s, fitted on every
// shape after every fourth was held back to measure its error.
std::string fit_accumulate_into(const CalibrationInput& in, hardware::GpuProfile& p, std::string& r) {
  if (in.accumulate.size() < kMinAccumulateShapes)
    return in.accumulate_origin + ": error: " + std::to_string(in.accumulate.size()) +
           " weight-gradient shapes; the fit needs at least " + std::to_string(kMinAccumulateShapes) +
           " (every fourth is held back)";
  const auto [fit_on, held] = hold_back_every_fourth(in.accumulate);
  AccumulateFit check, all;
  try {
    check = fit_accumulate(fit_on, held);
    all = fit_accumulate(in.accumulate, in.accumulate);
  } catch (const std::invalid_argument&) {
    return in.accumulate_origin +
           ": error: adding into the fp32 buffer is not slower than writing BF16 over these shapes; nothing to fit "
           "(measure larger weight-gradient shapes)";
  }
  const auto worst = [](const std::vector<double>& e) { return *std::max_element(e.begin(), e.end()); };
  const std::string held_text =
      fmt::format("{} of {} shapes held back: median error {}, max {} (without the term {}, {})", held.size(),
                  in.accumulate.size(), percent(median_of(check.fp32_errors)), percent(worst(check.fp32_errors)),
                  percent(median_of(check.without_errors)), percent(worst(check.without_errors)));
  r += fmt::format("weight-gradient GEMMs adding into fp32 from {}: extra epilogue bytes (2*4 - 2)*m*n at one rate; {}\n",
                   in.accumulate_origin, held_text);
  r += fmt::format("  gemm_accumulate_bytes_per_s = {:.4g} ({:.3f}x hbm_bytes_per_s)\n", all.bytes_per_s,
                   all.bytes_per_s / p.hbm_bytes_per_s().value());
  p.mutable_gemm_accumulate_bytes_per_s()->set_value(all.bytes_per_s);
  p.mutable_gemm_accumulate_bytes_per_s()->set_source(
      fmt::format("trainsim calibrate: the extra time of adding into an fp32 buffer over the extra epilogue bytes, "
                  "least squares of the relative time residuals over {} weight-gradient shapes of {}; {}",
                  in.accumulate.size(), in.accumulate_origin, held_text));
  return "";
}

// The dense peak the GEMMs of `dtype` are a fraction of (the base profile's datasheet
// figure); 0 where the GPU has no such units.
double gemm_peak(const hardware::GpuProfile& base, const std::string& dtype) {
  if (dtype == "bf16") return base.peak_bf16_flops().value();
  if (dtype == "fp16") return base.peak_fp16_flops().value();
  if (dtype == "fp8") return base.peak_fp8_flops().value();
  return base.peak_tf32_flops().value();
}

// One dtype's GEMM table: the shape model (gemm_fit.hpp) with every fourth shape held back,
// then fitted on all of them and written as a gemm_fit entry and as the curve the cost
// model reads for the dtype — gemm_efficiency for BF16 (with the profile's tiling), a
// dtype_gemm_efficiency entry (with its own tiles) for the others.
std::string fit_gemm_into(const std::string& dtype, const std::vector<GemmMeasurement>& rows,
                          const std::string& origin, const CalibrationInput& in, hardware::GpuProfile& p,
                          std::string& r) {
  if (in.sms <= 0)
    return "error: --sms: the SM count of the measured GPU is needed for the GEMM fit (H100 132, A100 108)";
  if (rows.size() < 8)
    return origin + ": error: " + std::to_string(rows.size()) +
           " GEMM shapes; the fit with held-back shapes needs at least 8";
  const double peak = gemm_peak(in.base, dtype);
  if (!(peak > 0))
    return origin + ": error: the base profile '" + in.base.name() + "' has no " + dtype +
           " peak (0 FLOP/s); calibrate against the profile of the measured GPU";
  std::vector<GemmMeasurement> fit_on, held;
  for (std::size_t i = 0; i < rows.size(); ++i) (i % 4 == 3 ? held : fit_on).push_back(rows[i]);
  GemmModel check = fit_gemm(fit_on, in.sms, peak);
  std::vector<double> errors;
  for (const auto& h : held) errors.push_back(std::abs(check.predict(h.shape) - h.seconds) / h.seconds);
  const double med = median_of(errors);
  const double worst = *std::max_element(errors.begin(), errors.end());
  GemmModel m = fit_gemm(rows, in.sms, peak);
  const std::string held_text = fmt::format("every fourth of {} shapes held back: median error {}, max {}",
                                            rows.size(), percent(med), percent(worst));
  std::string upper = dtype;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // A base profile that was itself calibrated carries this dtype's fit and curve: the new
  // measurement replaces them (one of each per dtype), it does not sit beside them.
  const auto drop_dtype = [&](auto* entries) {
    entries->erase(std::remove_if(entries->begin(), entries->end(), [&](const auto& e) { return e.dtype() == dtype; }),
                   entries->end());
  };
  drop_dtype(p.mutable_gemm_fit());
  drop_dtype(p.mutable_dtype_gemm_efficiency());
  auto* g = p.add_gemm_fit();
  g->set_dtype(dtype);
  g->set_sms(m.sms);
  g->set_tile_m(m.tile_m);
  g->set_tile_n(m.tile_n);
  g->set_launch_s(m.launch_s);
  g->set_efficiency(m.efficiency);
  g->set_wave_s(m.wave_s);
  g->set_s_per_byte(m.s_per_byte);
  g->set_source(fmt::format("{} GEMM measurements {}; {}", upper, origin, held_text));
  // The cost model reads efficiency by FLOPs: write the fitted model at square shapes,
  // only as large as the measurements reach (the curve is flat beyond its last point), so
  // that the model is never extrapolated past the shapes it was fitted on.
  std::int64_t max_m = 0, max_n = 0, max_k = 0;
  for (const auto& measured : rows) {
    max_m = std::max(max_m, measured.shape.m);
    max_n = std::max(max_n, measured.shape.n);
    max_k = std::max(max_k, measured.shape.k);
  }
  const std::int64_t reach = std::min({max_m, max_n, max_k});
  hardware::EfficiencyCurve* curve = nullptr;
  if (dtype == "bf16") {
    curve = p.mutable_gemm_efficiency();
  } else {
    auto* e = p.add_dtype_gemm_efficiency();
    e->set_dtype(dtype);
    e->set_tile_rows(m.tile_m);
    e->set_tile_cols(m.tile_n);
    e->set_curve_sm_count(in.sms);
    curve = e->mutable_curve();
  }
  curve->Clear();
  curve->set_variable("gemm_flops");
  int largest = 0;
  for (int n : kCurveSizes) {
    if (n > reach && largest > 0) break;
    largest = n;
    auto* pt = curve->add_point();
    pt->set_x(GemmShape{1, n, n, n}.flops());
    pt->set_efficiency(square_efficiency(m, n));
  }
  // The points are the fitted model's at square shapes, so they carry its tiles'
  // quantization on the measured GPU's SMs: the cost model divides it out by these.
  auto cited = [&](hardware::Cited* c, double v) {
    c->set_value(v);
    c->set_source(fmt::format("trainsim calibrate: the GEMM shape model fitted to {} ({} SMs given by --sms)", origin,
                              in.sms));
  };
  if (dtype == "bf16") {
    cited(p.mutable_sm_count(), in.sms);
    cited(p.mutable_gemm_curve_sm_count(), in.sms);
    cited(p.mutable_gemm_tile_rows(), m.tile_m);
    cited(p.mutable_gemm_tile_cols(), m.tile_n);
  } else if (p.sm_count().value() > 0 && p.sm_count().value() != in.sms) {
    cited(p.mutable_sm_count(), in.sms);  // the GPU measured; its other curves keep their own SM counts
  }
  curve->set_source(fmt::format("trainsim calibrate: {} GEMM shape model fitted to {} (tiles {}x{}, {} SMs), "
                                "evaluated at square N = 256 … {} (the measured shapes' reach; flat beyond), of the "
                                "{} peak {:.4g} FLOP/s; {}",
                                upper, origin, m.tile_m, m.tile_n, m.sms, largest, upper, peak, held_text));
  r += fmt::format("gemm {}: {} shapes, tiles {}x{}, launch {:.2f} us, efficiency {:.3f}, per wave {:.3f} us\n", dtype,
                   rows.size(), m.tile_m, m.tile_n, m.launch_s * 1e6, m.efficiency, m.wave_s * 1e6);
  r += "  " + held_text + "\n";
  r += fmt::format("  {} written at square N = 256 … {} (largest measured dims), flat beyond\n",
                   dtype == "bf16" ? "gemm_efficiency" : "dtype_gemm_efficiency " + dtype, largest);
  return "";
}

}  // namespace

CalibrationOutput calibrate(const CalibrationInput& in) {
  CalibrationOutput out;
  out.profile = in.base;
  hardware::GpuProfile& p = out.profile;
  p.set_name(in.name.empty() ? in.base.name() + "-calibrated" : in.name);
  std::string& r = out.report;
  r += fmt::format("calibration of profile '{}' (base '{}')\n", p.name(), in.base.name());

  for (const NcclTestsLog& log : in.logs) {
    if (log.ranks <= 0) {
      out.error = log.origin + ": error: the log lists no devices ('#  Rank …' lines / config.devices), so the group "
                               "size is unknown";
      return out;
    }
    std::vector<SizeTime> points = points_of(log);
    std::vector<double> sizes;
    for (const auto& s : points) sizes.push_back(s.bytes);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    if (sizes.size() < 6) {
      out.error = log.origin + ": error: " + std::to_string(sizes.size()) +
                  " distinct message sizes above 0 B; an α–β fit with held-back sizes needs at least 6";
      return out;
    }
    if (sizes.size() > kMaxSizes) {
      out.error = log.origin + ": error: " + std::to_string(sizes.size()) + " distinct message sizes (at most " +
                  std::to_string(kMaxSizes) + ")";
      return out;
    }
    HoldoutResult held = hold_out_sizes(points, 3);
    AlphaBetaFit fit = fit_alpha_beta(points);
    auto* c = p.add_collective_fit();
    c->set_collective(log.collective);
    c->set_algorithm(log.algorithm);
    c->set_protocol(log.protocol);
    c->set_scope(log.nodes > 1 ? "inter-node" : "intra-node");
    c->set_group_size(log.ranks);
    c->set_nodes(log.nodes);
    for (const auto& s : fit.segments) {
      auto* seg = c->add_segment();
      seg->set_min_bytes(s.min_bytes);
      seg->set_max_bytes(s.max_bytes);
      seg->set_alpha_s(s.alpha_s);
      seg->set_beta_s_per_byte(s.beta_s_per_byte);
    }
    c->set_source(fmt::format("nccl-tests log {} ({}, {} ranks on {} nodes, {}); segmented α–β fit of the "
                              "out-of-place times; every third size held back: median error {}, max {}",
                              log.origin, format_name(log.format), log.ranks, log.nodes, log.gpu_name,
                              percent(held.median), percent(held.max)));
    r += fmt::format("collective {} algo={} proto={} {} ranks={} nodes={}: {} sizes, {} rows skipped, {} segments\n",
                     log.collective, log.algorithm, log.protocol, c->scope(), log.ranks, log.nodes, sizes.size(),
                     log.skipped_rows, fit.segments.size());
    for (const auto& s : fit.segments) {
      r += fmt::format("  {:>12.0f} … {:>12.0f} B: alpha {:.3f} us, {:.2f} GB/s\n", s.min_bytes, s.max_bytes,
                       s.alpha_s * 1e6, s.beta_s_per_byte > 0 ? 1e-9 / s.beta_s_per_byte : 0.0);
    }
    r += fmt::format("  held back {} sizes: median error {}, max {}\n", held.held_back_bytes.size(),
                     percent(held.median), percent(held.max));
  }

  if (!in.gemm_bf16.empty()) {
    if (std::string e = fit_gemm_into("bf16", in.gemm_bf16, in.gemm_origin, in, p, r); !e.empty()) {
      out.error = e;
      return out;
    }
  }
  for (std::size_t i = 0; i < in.gemm_other.size(); ++i) {
    const auto& t = in.gemm_other[i];
    const auto& known = kOtherGemmDtypes;
    if (std::find_if(std::begin(known), std::end(known), [&](const char* d) { return t.dtype == d; }) == std::end(known)) {
      out.error = t.origin + ": error: GEMM dtype \"" + t.dtype + "\"; valid: fp16, fp8, tf32 (BF16 tables go in as --gemm-csv)";
      return out;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (in.gemm_other[j].dtype == t.dtype) {
        out.error = t.origin + ": error: a second " + t.dtype + " GEMM table (the first: " + in.gemm_other[j].origin + ")";
        return out;
      }
    }
    if (std::string e = fit_gemm_into(t.dtype, t.rows, t.origin, in, p, r); !e.empty()) {
      out.error = e;
      return out;
    }
  }
  if (!in.attention.empty()) {
    if (std::string e = fit_attention_into(in, p, r); !e.empty()) {
      out.error = e;
      return out;
    }
  }
  if (!in.copies.empty()) {
    if (std::string e = fit_copies_into(in, p, r); !e.empty()) {
      out.error = e;
      return out;
    }
  }
  if (!in.memory.empty()) {
    if (std::string e = fit_memory_into(in, p, r); !e.empty()) {
      out.error = e;
      return out;
    }
  }
  if (!in.accumulate.empty()) {
    if (std::string e = fit_accumulate_into(in, p, r); !e.empty()) {
      out.error = e;
      return out;
    }
  }
  if (in.logs.empty() && in.gemm_bf16.empty() && in.gemm_other.empty() && in.attention.empty() && in.copies.empty() &&
      in.memory.empty() && in.accumulate.empty())
    out.error = "error: nothing to fit (no nccl-tests log, no GEMM, attention, copy, memory or accumulating-GEMM "
                "measurements)";
  p.set_description(in.base.description() + "; calibrated by trainsim calibrate");
  return out;
}

}  // namespace trainsim::calibration
