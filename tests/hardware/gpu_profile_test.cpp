#include "hardware/gpu_profile.hpp"

#include "hardware/detail/embedded_profiles.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace trainsim::hardware {
namespace {

using google::protobuf::FieldDescriptor;

// The shipped text of a profile, to derive broken variants from.
std::string shipped_text(const std::string& name) {
  for (const auto& e : detail::embedded_profiles()) {
    if (e.name == name) return e.text;
  }
  ADD_FAILURE() << "no embedded profile " << name;
  return {};
}

// 1-based line of the first occurrence of `needle` in `text`.
int line_of(const std::string& text, const std::string& needle) {
  const auto pos = text.find(needle);
  EXPECT_NE(pos, std::string::npos) << needle;
  int line = 1;
  for (std::size_t i = 0; i < pos; ++i) line += text[i] == '\n';
  return line;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

TEST(GpuProfile, NamesAreSortedAndComplete) {
  EXPECT_EQ(profile_names(), (std::vector<std::string>{"a100-40gb", "a100-80gb", "b200", "h100-sxm", "h200", "h800",
                                                       "v100-32gb"}));
}

TEST(GpuProfile, UnknownNameIsNullopt) {
  EXPECT_FALSE(find_profile("h100").has_value());
  EXPECT_FALSE(find_profile("").has_value());
}

// Every Cited constant of every shipped profile has a source and a positive value, except
// the documented zeros (a peak of 0 = no such tensor cores: A100 FP8; V100 BF16, FP8, TF32;
// without FP8 tensor cores the FP8 GEMM efficiency is 0 too). The repeated fits that
// `trainsim calibrate` writes are absent from datasheet profiles.
TEST(GpuProfile, EveryShippedConstantIsPositiveAndCited) {
  for (const auto& name : profile_names()) {
    SCOPED_TRACE(name);
    const auto p = find_profile(name);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->name(), name);
    EXPECT_FALSE(p->description().empty());
    const auto* d = GpuProfile::descriptor();
    const auto* r = p->GetReflection();
    int cited_fields = 0;
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (f->type() != FieldDescriptor::TYPE_MESSAGE || f->is_repeated()) continue;
      SCOPED_TRACE(f->name());
      // Optional: only the profiles whose causal or dropout attention kernel was measured have them.
      if ((f->name() == "causal_attention_efficiency" || f->name() == "dropout_attention_efficiency") &&
          !r->HasField(*p, f))
        continue;
      ASSERT_TRUE(r->HasField(*p, f));
      if (f->message_type() == Cited::descriptor()) {
        ++cited_fields;
        const auto& c = static_cast<const Cited&>(r->GetMessage(*p, f));
        EXPECT_FALSE(c.source().empty());
        const bool documented_zero =
            (name.rfind("a100-", 0) == 0 && (f->name() == "peak_fp8_flops" || f->name() == "fp8_gemm_efficiency")) ||
            (name == "v100-32gb" && (f->name() == "peak_bf16_flops" || f->name() == "peak_fp8_flops" ||
                                     f->name() == "peak_tf32_flops" || f->name() == "fp8_gemm_efficiency"));
        if (documented_zero) {
          EXPECT_EQ(c.value(), 0.0);
        } else {
          EXPECT_GT(c.value(), 0.0);
        }
      } else {
        const auto& curve = static_cast<const EfficiencyCurve&>(r->GetMessage(*p, f));
        EXPECT_FALSE(curve.source().empty());
        EXPECT_GE(curve.point_size(), 1);
        for (const auto& pt : curve.point()) {
          EXPECT_GT(pt.x(), 0.0);
          EXPECT_GT(pt.efficiency(), 0.0);
          EXPECT_LE(pt.efficiency(), 1.0);
        }
      }
    }
    EXPECT_EQ(cited_fields, 26);
    // Fractions really are fractions.
    EXPECT_LE(p->memory_efficiency().value(), 1.0);
    EXPECT_LE(p->nic_efficiency().value(), 1.0);
  }
}

// Spot checks against reference §3.1, §1.2, §1.3, §2.4, §4.1-§4.4.
TEST(GpuProfile, ShippedValuesMatchTheReference) {
  const auto a100 = *find_profile("a100-80gb");
  EXPECT_DOUBLE_EQ(a100.peak_bf16_flops().value(), 312e12);
  EXPECT_DOUBLE_EQ(a100.hbm_bytes_per_s().value(), 2039e9);
  EXPECT_DOUBLE_EQ(a100.hbm_capacity_bytes().value(), 81920.0 * 1024 * 1024);  // nvidia-smi: 81920MiB
  EXPECT_DOUBLE_EQ(a100.nvlink_bytes_per_s().value(), 240e9);
  EXPECT_DOUBLE_EQ(a100.nic_efficiency().value(), 24.0 / 25.0);
  EXPECT_DOUBLE_EQ(a100.pcie_bytes_per_s().value(), 25e9);
  // Derived from our H100 measurement's shape model on the A100's SMs and peak, its full-wave
  // efficiency 0.738337 × (271.2/312)/(794.5/989) = 0.798903, the A100/H100 ratio of best-shape
  // MAMF efficiencies (tests/calibration/measured_gpus_test.cpp derives every point): 16384^3
  // at 0.796486, the launch and per-wave times taking the rest.
  EXPECT_NEAR(evaluate(a100.gemm_efficiency(), 1e15), 0.796486, 1e-6);
  EXPECT_NE(a100.gemm_efficiency().source().find("derived:"), std::string::npos);
  EXPECT_NEAR(evaluate(a100.batched_gemm_efficiency(), 1e10), 187.0 / 312, 1e-6);

  const auto h100 = *find_profile("h100-sxm");
  EXPECT_DOUBLE_EQ(h100.peak_bf16_flops().value(), 989e12);
  EXPECT_DOUBLE_EQ(h100.peak_fp8_flops().value(), 1979e12);
  EXPECT_DOUBLE_EQ(h100.hbm_bytes_per_s().value(), 3.35e12);
  EXPECT_DOUBLE_EQ(h100.nvlink_bytes_per_s().value(), 370.8e9);
  EXPECT_DOUBLE_EQ(h100.nvlink_latency_s().value(), 3.4e-6);
  EXPECT_DOUBLE_EQ(h100.network_latency_s().value(), 14e-6);
  EXPECT_DOUBLE_EQ(h100.nic_efficiency().value(), 47.0 / 50.0);
  EXPECT_DOUBLE_EQ(h100.memory_efficiency().value(), 0.675);
  EXPECT_DOUBLE_EQ(h100.board_power_w().value(), 700);
  // GEMMs from our own measurement on an H100 (187 shapes, tests/data/calibration/harness/h100/;
  // tests/calibration/measured_gpus_test.cpp checks the profile is calibrate's fit of it):
  // 2048^3 at 0.562899 of peak (556.7 TFLOP/s), 0.732729 (724.7) past 16384^3, in 64 × 64 tiles.
  EXPECT_NEAR(evaluate(h100.gemm_efficiency(), 2.0 * 2048 * 2048 * 2048), 0.562899, 1e-6);
  EXPECT_NEAR(evaluate(h100.gemm_efficiency(), 1e15), 0.732729, 1e-6);
  EXPECT_NE(h100.gemm_efficiency().source().find("tests/data/calibration/harness/h100/gemm-bf16.csv"),
            std::string::npos);
  EXPECT_EQ(h100.gemm_tile_rows().value(), 64);
  EXPECT_EQ(h100.dtype_gemm_efficiency_size(), 2);  // FP16 and FP8, measured the same way
  // cuDNN's fused attention measured on an H100 (tests/data/calibration/harness/h100/), fitted:
  // 1k and 8k points (the rate measured at each length, 16k tokens per call), flat beyond.
  EXPECT_NEAR(evaluate(h100.batched_gemm_efficiency(), 14.0 * 1024 * 1024 * 128), 0.412673, 1e-6);
  EXPECT_NEAR(evaluate(h100.batched_gemm_efficiency(), 14.0 * 8192 * 8192 * 128), 0.567721, 1e-6);
  EXPECT_NEAR(evaluate(h100.batched_gemm_efficiency(), 14.0 * 16384 * 16384 * 128), 0.567721, 1e-6);
  EXPECT_NEAR(h100.fp8_gemm_efficiency().value(), 1402.6 / 1979, 1e-6);
  EXPECT_DOUBLE_EQ(h100.hbm_capacity_bytes().value(), 81559.0 * 1024 * 1024);  // nvidia-smi: 81559MiB
  EXPECT_DOUBLE_EQ(h100.cublas_workspace_bytes().value(), 32.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(a100.cublas_workspace_bytes().value(), (2 * 4096.0 + 8 * 16) * 1024);
  EXPECT_DOUBLE_EQ(a100.cuda_context_bytes().value(), 723.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(a100.nccl_buffer_bytes_per_communicator().value(), 16 * (4194304.0 + 4915200 + 524288));
  EXPECT_EQ(a100.fp8_gemm_efficiency().value(), 0);
  // SMs (reference §3.1); the A100's curve keeps the tiles of the H100 shape model it is
  // derived from, evaluated on the A100's own SMs, so that it is de-quantized as it was made.
  EXPECT_EQ(a100.sm_count().value(), 108);
  EXPECT_EQ(h100.sm_count().value(), 132);
  EXPECT_EQ(a100.gemm_tile_rows().value(), h100.gemm_tile_rows().value());
  EXPECT_EQ(a100.gemm_tile_cols().value(), h100.gemm_tile_cols().value());
  EXPECT_EQ(a100.gemm_curve_sm_count().value(), 108);

  const auto h200 = *find_profile("h200");
  EXPECT_DOUBLE_EQ(h200.hbm_bytes_per_s().value(), 4.8e12);
  EXPECT_DOUBLE_EQ(h200.hbm_capacity_bytes().value(), 143771.0 * 1024 * 1024);  // nvidia-smi: 143771MiB
  EXPECT_DOUBLE_EQ(h200.peak_bf16_flops().value(), h100.peak_bf16_flops().value());
  // Each Hopper GPU its own measurement; the H800, not measured, has the H100's compute.
  EXPECT_NE(h200.gemm_efficiency().source().find("tests/data/calibration/harness/h200/gemm-bf16.csv"),
            std::string::npos);
  EXPECT_NEAR(evaluate(h200.gemm_efficiency(), 1e15), 0.702142, 1e-6);
  const auto h800 = *find_profile("h800");
  ASSERT_EQ(h800.gemm_efficiency().point_size(), h100.gemm_efficiency().point_size());
  for (int i = 0; i < h800.gemm_efficiency().point_size(); ++i) {
    EXPECT_EQ(h800.gemm_efficiency().point(i).efficiency(), h100.gemm_efficiency().point(i).efficiency());
  }
}

TEST(GpuProfile, ShippedTextRoundTripsThroughParseProfile) {
  GpuProfile p;
  EXPECT_EQ(parse_profile(shipped_text("h100-sxm"), "h100-sxm.textproto", p), "");
  EXPECT_EQ(p.name(), "h100-sxm");
}

TEST(GpuProfile, SyntaxErrorNamesOriginLineAndColumn) {
  GpuProfile p;
  const std::string error = parse_profile("name: \"x\"\n  bogus_field: 1\n", "my.textproto", p);
  std::printf("syntax error: %s\n", error.c_str());
  // Protobuf reports an unknown field at the token after its name (zero-based 1:13).
  EXPECT_EQ(error.rfind("my.textproto:2:14: ", 0), 0u) << error;
  EXPECT_NE(error.find("bogus_field"), std::string::npos) << error;
  EXPECT_TRUE(p.name().empty()) << "a failed parse must leave the output untouched";

  const std::string bad_value = parse_profile("name: \"x\"\npeak_bf16_flops { value: fast }\n", "v.textproto", p);
  EXPECT_EQ(bad_value.rfind("v.textproto:2:26: ", 0), 0u) << bad_value;
}

TEST(GpuProfile, ValueOutOfRangePointsAtTheValue) {
  const std::string text = replace_once(shipped_text("h100-sxm"), "value: 0.675", "value: 1.5");
  GpuProfile p;
  const std::string error = parse_profile(text, "bad.textproto", p);
  const std::string expected = "bad.textproto:" + std::to_string(line_of(text, "value: 1.5")) +
                               ":3: memory_efficiency.value: must be a fraction in (0, 1], got 1.5";
  EXPECT_EQ(error, expected);
}

TEST(GpuProfile, AccumulateRateMustBePositive) {
  const std::string text = replace_once(shipped_text("h100-sxm"), "value: 4.649e12", "value: 0");
  GpuProfile p;
  const std::string error = parse_profile(text, "bad.textproto", p);
  const std::string expected = "bad.textproto:" + std::to_string(line_of(text, "value: 0\n  source: \"the extra")) +
                               ":3: gemm_accumulate_bytes_per_s.value: must be > 0, got 0";
  EXPECT_EQ(error, expected);
}

// The causal attention curve is optional, and checked like the others where it is given.
TEST(GpuProfile, CausalAttentionCurveIsOptionalAndChecked) {
  GpuProfile p;
  std::string text = shipped_text("h100-sxm");
  ASSERT_EQ(parse_profile(text, "f", p), "");
  EXPECT_TRUE(p.has_causal_attention_efficiency());
  EXPECT_FALSE(find_profile("a100-80gb")->has_causal_attention_efficiency());
  const auto curve = text.find("causal_attention_efficiency {");
  const auto variable = text.find("fwd_bwd_flops_per_sequence_head", curve);
  text.replace(variable, std::string("fwd_bwd_flops_per_sequence_head").size(), "gemm_flops");
  const auto point = text.find("efficiency: 0.", text.find("point", curve));
  text.replace(point, std::string("efficiency: 0.").size(), "efficiency: 1.");
  const std::string error = parse_profile(text, "f", p);
  EXPECT_NE(error.find("causal_attention_efficiency.variable: variable is 'gemm_flops', expected "
                       "'fwd_bwd_flops_per_sequence_head'"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("causal_attention_efficiency.point[0].efficiency: efficiency must be a fraction in (0, 1], got 1."),
            std::string::npos)
      << error;
}

TEST(GpuProfile, MissingSourceAndEmptyCurveAreErrors) {
  GpuProfile p;
  std::string text = shipped_text("a100-80gb");
  const auto start = text.find("board_power_w {");
  const auto end = text.find("}", start);
  text.replace(start, end - start + 1, "board_power_w { value: 400 }");
  std::string error = parse_profile(text, "f", p);
  EXPECT_EQ(error, "f:" + std::to_string(line_of(text, "board_power_w {")) +
                       ":1: board_power_w: has no source (cite the datasheet, measurement or calibration)");

  text = shipped_text("h200");
  const auto curve = text.find("batched_gemm_efficiency");
  for (auto s = text.find("point { x: ", curve); s < text.find("source:", curve); s = text.find("point { x: ", curve))
    text.erase(s, text.find('\n', s) - s);
  error = parse_profile(text, "f", p);
  EXPECT_EQ(error, "f:" + std::to_string(line_of(text, "batched_gemm_efficiency {")) +
                       ":1: batched_gemm_efficiency: has no points (an empty curve has no efficiency to give)");
}

TEST(GpuProfile, MissingFieldAndWrongVariableAreReportedTogether) {
  std::string text = shipped_text("h100-sxm");
  const auto start = text.find("pcie_bytes_per_s {");
  text.erase(start);
  text = replace_once(text, "variable: \"gemm_flops\"", "variable: \"flops\"");
  GpuProfile p;
  const std::string error = parse_profile(text, "f", p);
  std::printf("errors:\n%s\n", error.c_str());
  EXPECT_NE(error.find("f:" + std::to_string(line_of(text, "variable: \"flops\"")) +
                       ":3: gemm_efficiency.variable: variable is 'flops', expected 'gemm_flops'"),
            std::string::npos);
  EXPECT_NE(error.find("f:1:1: pcie_bytes_per_s: missing"), std::string::npos);
}

TEST(GpuProfile, CurvePointsMustIncrease) {
  std::string text = replace_once(shipped_text("h100-sxm"), "x: 17179869184", "x: 1000");
  GpuProfile p;
  const std::string error = parse_profile(text, "f", p);
  EXPECT_NE(error.find("gemm_efficiency.point[3].x: x must increase from point to point: 1000 after 2.14748e+09"),
            std::string::npos)
      << error;
}

// The GEMM tiling's numbers are counts that come together (hardware/gemm_tiling.hpp).
TEST(GpuProfile, GemmTilingIsWholeAndAllOrNothing) {
  const std::string base = shipped_text("a100-80gb");
  GpuProfile p;
  std::string text = replace_once(base, "value: 108\n", "value: 107.5\n");
  std::string error = parse_profile(text, "f", p);
  EXPECT_EQ(error, "f:" + std::to_string(line_of(text, "value: 107.5")) +
                       ":3: sm_count.value: must be a whole number from 0 to 1048576, got 107.5");
  text = replace_once(base, "gemm_tile_rows {\n  value: 64\n", "gemm_tile_rows {\n  value: 0\n");
  error = parse_profile(text, "f", p);
  EXPECT_EQ(error, "f:" + std::to_string(line_of(text, "sm_count {")) +
                       ":1: sm_count: sm_count, gemm_tile_rows, gemm_tile_cols and gemm_curve_sm_count must be all "
                       "0 (no GEMM tiling: the curve as it is) or all > 0");
}

// A measured GEMM curve of another dtype (dtype_gemm_efficiency): a dtype the cost model
// has a peak for besides BF16, once, a valid "gemm_flops" curve, tiles and SM count > 0.
TEST(GpuProfile, DtypeGemmCurvesAreCheckedLikeTheGemmCurve) {
  // The H100 profile without its own measured FP16 and FP8 curves (and their fits), which
  // close the file.
  std::string base = shipped_text("h100-sxm");
  base.erase(base.find("dtype_gemm_efficiency {"));
  const std::string good =
      "dtype_gemm_efficiency { dtype: \"tf32\" tile_rows: 128 tile_cols: 256 curve_sm_count: 132\n"
      "  curve { variable: \"gemm_flops\" point { x: 1e9 efficiency: 0.3 } point { x: 1e12 efficiency: 0.8 }\n"
      "          source: \"measured\" } }\n";
  GpuProfile p;
  EXPECT_EQ(parse_profile(base + good, "f", p), "");
  ASSERT_EQ(p.dtype_gemm_efficiency_size(), 1);

  std::string text = base + replace_once(good, "\"tf32\"", "\"bf16\"");
  std::string error = parse_profile(text, "f", p);
  EXPECT_EQ(error, "f:" + std::to_string(line_of(text, "dtype: \"bf16\"")) +
                       ":25: dtype_gemm_efficiency[0].dtype: dtype is 'bf16'; valid: fp16, fp8, tf32 (BF16's curve is "
                       "gemm_efficiency)")
      << error;
  text = base + good + good;
  error = parse_profile(text, "f", p);
  EXPECT_NE(error.find("dtype_gemm_efficiency[1].dtype: a second curve for dtype 'tf32' (one per dtype)"),
            std::string::npos)
      << error;
  error = parse_profile(base + replace_once(good, "tile_cols: 256", "tile_cols: 0"), "f", p);
  EXPECT_NE(error.find("dtype_gemm_efficiency[0].tile_cols: must be a whole number from 1 to 1048576, got 0"),
            std::string::npos)
      << error;
  error = parse_profile(base + replace_once(good, " curve_sm_count: 132", ""), "f", p);
  EXPECT_NE(error.find("dtype_gemm_efficiency[0].curve_sm_count: must be a whole number from 1 to 1048576, got 0"),
            std::string::npos)
      << error;
  error = parse_profile(base + replace_once(good, "efficiency: 0.8", "efficiency: 1.2"), "f", p);
  EXPECT_NE(error.find("dtype_gemm_efficiency[0].curve.point[1].efficiency: efficiency must be a fraction in (0, 1], "
                       "got 1.2"),
            std::string::npos)
      << error;
  error = parse_profile(base + replace_once(good, "\"gemm_flops\"", "\"flops\""), "f", p);
  EXPECT_NE(error.find("dtype_gemm_efficiency[0].curve.variable: variable is 'flops', expected 'gemm_flops'"),
            std::string::npos)
      << error;
  error = parse_profile(base + replace_once(good, "source: \"measured\" ", ""), "f", p);
  EXPECT_NE(error.find("dtype_gemm_efficiency[0].curve: has no source"), std::string::npos) << error;
  error = parse_profile(base + "dtype_gemm_efficiency { dtype: \"fp16\" tile_rows: 128 tile_cols: 128 "
                               "curve_sm_count: 132 }\n", "f", p);
  EXPECT_NE(error.find("dtype_gemm_efficiency[0].curve: missing (needs at least one point and a source)"),
            std::string::npos)
      << error;
}

EfficiencyCurve curve(std::initializer_list<std::pair<double, double>> points) {
  EfficiencyCurve c;
  c.set_variable("test");
  for (const auto& [x, e] : points) {
    auto* p = c.add_point();
    p->set_x(x);
    p->set_efficiency(e);
  }
  return c;
}

TEST(Evaluate, InterpolatesLinearlyInLog2) {
  const auto c = curve({{1024, 0.2}, {4096, 0.6}, {8192, 0.8}});
  EXPECT_DOUBLE_EQ(evaluate(c, 1024), 0.2);
  EXPECT_DOUBLE_EQ(evaluate(c, 2048), 0.4);  // halfway in log2 between 2^10 and 2^12
  EXPECT_NEAR(evaluate(c, std::exp2(10.5)), 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(evaluate(c, 4096), 0.6);
  EXPECT_NEAR(evaluate(c, std::exp2(12.5)), 0.7, 1e-12);
}

TEST(Evaluate, ClampsFlatBeyondTheEnds) {
  const auto c = curve({{1024, 0.2}, {4096, 0.6}});
  EXPECT_DOUBLE_EQ(evaluate(c, 1), 0.2);
  EXPECT_DOUBLE_EQ(evaluate(c, 0), 0.2);
  EXPECT_DOUBLE_EQ(evaluate(c, -5), 0.2);
  EXPECT_DOUBLE_EQ(evaluate(c, 1e30), 0.6);
  EXPECT_DOUBLE_EQ(evaluate(curve({{100, 0.5}}), 1), 0.5);
  EXPECT_DOUBLE_EQ(evaluate(curve({{100, 0.5}}), 1e9), 0.5);
}

TEST(Evaluate, EmptyCurveThrows) { EXPECT_THROW(evaluate(curve({}), 1.0), std::invalid_argument); }

}  // namespace
}  // namespace trainsim::hardware
