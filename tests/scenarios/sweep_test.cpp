// Sweep expansion: variant order, constraints, and every problem of a sweep block reported
// at file:line:column.
#include "scenarios/sweep.hpp"

#include <gtest/gtest.h>

#include <google/protobuf/stubs/logging.h>

#include <cstdlib>
#include <string>
#include <variant>

#include "scenarios/field_path.hpp"

namespace trainsim::scenarios {
namespace {

const char* const BASE = R"(model { preset: "gpt-1.7b" }
training { sequence_length: 2048 global_batch_size: 512 }
cluster { preset: "dgx-a100-80gb" nodes: 4 }
)";

SweepPlan plan_of(const std::string& sweep) {
  auto loaded = load_sweep_text(std::string(BASE) + sweep, "s.textproto");
  if (auto* errors = std::get_if<std::vector<Diagnostic>>(&loaded)) {
    for (const auto& d : *errors) ADD_FAILURE() << d.str();
    return SweepPlan();
  }
  return std::get<SweepPlan>(std::move(loaded));
}

std::string errors_of(const std::string& sweep) {
  auto loaded = load_sweep_text(std::string(BASE) + sweep, "s.textproto");
  std::string out;
  if (auto* errors = std::get_if<std::vector<Diagnostic>>(&loaded))
    for (const auto& d : *errors) out += d.str() + "\n";
  return out;
}

TEST(Sweep, VariantsAreMixedRadixWithTheFirstAxisSlowest) {
  const SweepPlan plan = plan_of(R"(sweep {
  axis { field: "parallel.tensor" values: ["1", "2", "4"] }
  axis { field: "strategy.recompute" values: ["none", "full"] }
})");
  ASSERT_EQ(plan.size(), 6u);
  const std::vector<std::pair<std::int64_t, std::string>> expected = {
      {1, "none"}, {1, "full"}, {2, "none"}, {2, "full"}, {4, "none"}, {4, "full"}};
  for (std::uint64_t i = 0; i < plan.size(); ++i) {
    const Scenario v = plan.variant(i);
    EXPECT_EQ(v.parallel().tensor(), expected[i].first) << i;
    EXPECT_EQ(v.strategy().recompute(), expected[i].second) << i;
    EXPECT_FALSE(v.has_sweep());
    EXPECT_EQ(plan.axis_values(i), (std::vector<std::string>{std::to_string(expected[i].first), expected[i].second}));
  }
  // The base is untouched by the variants.
  EXPECT_EQ(plan.base().training().global_batch_size(), 512);
  EXPECT_FALSE(plan.base().parallel().has_tensor());
}

TEST(Sweep, EnumsDoublesAndBoolsTakeTheirTextFormatValues) {
  const SweepPlan plan = plan_of(R"(sweep {
  axis { field: "training.precision" values: ["BF16", "FP16"] }
  axis { field: "cluster.fabric.fat_tree.nic_gbps" values: ["100", "400.5"] }
  axis { field: "strategy.overlap_grad_reduce" values: ["true", "false"] }
})");
  ASSERT_EQ(plan.size(), 8u);
  const Scenario last = plan.variant(7);
  EXPECT_EQ(last.training().precision(), FP16);
  EXPECT_DOUBLE_EQ(last.cluster().fabric().fat_tree().nic_gbps(), 400.5);
  EXPECT_FALSE(last.strategy().overlap_grad_reduce());
  EXPECT_TRUE(plan.variant(0).strategy().overlap_grad_reduce());
}

TEST(Sweep, ConstraintsKeepOnlyTheVariantsThatHoldThem) {
  const SweepPlan plan = plan_of(R"(sweep {
  axis { field: "parallel.tensor" values: ["1", "2", "4", "8"] }
  axis { field: "parallel.pipeline" values: ["1", "2", "4"] }
  axis { field: "strategy.pipeline_schedule" values: ["1f1b", "gpipe"] }
  constraint: "parallel.tensor * parallel.pipeline <= 8"
  constraint: "(parallel.tensor + 1) % 2 == 1"
  constraint: "strategy.pipeline_schedule != \"gpipe\""
})");
  int kept = 0;
  for (std::uint64_t i = 0; i < plan.size(); ++i) {
    const Scenario v = plan.variant(i);
    const bool expected = v.parallel().tensor() * v.parallel().pipeline() <= 8 && v.parallel().tensor() % 2 == 0 &&
                          v.strategy().pipeline_schedule() != "gpipe";
    EXPECT_EQ(!plan.broken_constraint(v).has_value(), expected) << i;
    kept += expected;
  }
  // tensor 2 × pipeline 1, 2, 4; tensor 4 × 1, 2; tensor 8 × 1 — 1F1B only.
  EXPECT_EQ(kept, 6);
  Scenario gpipe = plan.variant(1);
  EXPECT_EQ(plan.broken_constraint(gpipe), std::optional<std::string>("(parallel.tensor + 1) % 2 == 1"));
}

TEST(Sweep, DivisionByZeroBreaksTheConstraint) {
  const SweepPlan plan = plan_of(R"(sweep {
  axis { field: "parallel.tensor" values: ["0", "2"] }
  constraint: "8 / parallel.tensor >= 1"
})");
  EXPECT_TRUE(plan.broken_constraint(plan.variant(0)).has_value());
  EXPECT_FALSE(plan.broken_constraint(plan.variant(1)).has_value());
}

// A value of the wrong type is reported once, by the sweep's diagnostic above: protobuf's
// parser, which set_field asks, logs nothing of its own to stderr.
std::vector<std::string> protobuf_log;
TEST(Sweep, ValueThatDoesNotParseIsReportedOnlyByItsDiagnostic) {
  protobuf_log.clear();
  auto* before = google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int,
                                                    const std::string& message) { protobuf_log.push_back(message); });
  const std::string errors = errors_of(R"(sweep {
  axis { field: "training.micro_batch_size" values: ["1", "x"] }
})");
  google::protobuf::SetLogHandler(before);
  EXPECT_NE(errors.find("sweep.axis[0].values[1]: \"x\" is not a value of training.micro_batch_size (valid: int64)"),
            std::string::npos)
      << errors;
  EXPECT_TRUE(protobuf_log.empty()) << protobuf_log.front();
}

TEST(Sweep, ProblemsOfTheBlockArePlacedAndListWhatIsValid) {
  const std::string errors = errors_of(R"(sweep {
  axis { field: "parallel.tensr" values: ["1"] }
  axis { field: "parallel" values: ["1"] }
  axis { field: "training.precision" values: ["BF16", "FP4"] }
  axis { field: "parallel.pipeline" values: ["2", "2"] }
  axis { field: "strategy.zero_stage" }
  constraint: "parallel.tensor < "
  constraint: "parallel.tensor * nodes == 8"
})");
  EXPECT_NE(errors.find("s.textproto:5:10: error: sweep.axis[0].field: no field \"tensr\" in parallel (valid: tensor, "),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("s.textproto:6:10: error: sweep.axis[1].field: parallel is a message; name one of its fields"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("s.textproto:7:"), std::string::npos) << errors;
  EXPECT_NE(errors.find("sweep.axis[2].values[1]: \"FP4\" is not a value of training.precision (valid: "
                        "PRECISION_UNSPECIFIED, BF16, FP16, FP8)"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("sweep.axis[3].values[1]: \"2\" is listed twice"), std::string::npos) << errors;
  EXPECT_NE(errors.find("sweep.axis[4].values: the axis over strategy.zero_stage has no values"), std::string::npos)
      << errors;
  EXPECT_NE(errors.find("s.textproto:10:3: error: sweep.constraint[0]: expected a number, a \"string\" or a field path (at character 19"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("sweep.constraint[1]: no field \"nodes\" in the scenario (valid: name, model, training"),
            std::string::npos)
      << errors;
}

TEST(Sweep, AFileWithoutASweepBlockIsRefused) {
  EXPECT_NE(errors_of("").find("s.textproto: error: sweep: the scenario has no sweep block"), std::string::npos);
}

TEST(Sweep, TooManyVariantsAreRefused) {
  std::string axes = "sweep {\n";
  const char* fields[] = {"parallel.tensor", "parallel.pipeline", "parallel.data", "parallel.virtual_stages",
                          "training.micro_batch_size", "training.global_batch_size", "cluster.nodes",
                          "strategy.zero_stage", "parallel.first_stage_layers", "parallel.last_stage_layers"};
  for (const char* f : fields) {
    axes += std::string("  axis { field: \"") + f + "\" values: [";
    for (int v = 1; v <= 10; ++v) axes += (v > 1 ? ", \"" : "\"") + std::to_string(v) + "\"";
    axes += "] }\n";
  }
  axes += "}\n";
  EXPECT_NE(errors_of(axes).find("the axes make more than 4294967296 variants"), std::string::npos);
}

TEST(Sweep, VariantsValidateLikeScenarioFiles) {
  const SweepPlan plan = plan_of(R"(sweep { axis { field: "parallel.tensor" values: ["3", "2"] } })");
  auto bad = plan.load(plan.variant(0));
  ASSERT_TRUE(std::holds_alternative<std::vector<Diagnostic>>(bad));
  std::string all;
  for (const auto& d : std::get<std::vector<Diagnostic>>(bad)) all += d.str() + "\n";
  EXPECT_NE(all.find("s.textproto: error: parallel.data: cannot be derived: 32 GPUs / (tensor 3 × pipeline 1)"),
            std::string::npos)
      << all;
  auto good = plan.load(plan.variant(1));
  ASSERT_TRUE(std::holds_alternative<LoadedScenario>(good));
  EXPECT_EQ(std::get<LoadedScenario>(good).training.layout.data, 16);
}

TEST(Sweep, TheLoaderRefusesAFileWithASweepBlock) {
  auto loaded = load_text(std::string(BASE) + "sweep { axis { field: \"parallel.tensor\" values: [\"2\"] } }\n",
                          "s.textproto");
  ASSERT_TRUE(std::holds_alternative<std::vector<Diagnostic>>(loaded));
  EXPECT_EQ(std::get<std::vector<Diagnostic>>(loaded).front().str(),
            "s.textproto:4:1: error: sweep: the file has a sweep block: run its variants with `trainsim sweep "
            "s.textproto`, or remove the block to run the base scenario");
}

TEST(Sweep, TheShippedExampleExpands) {
  const char* src = std::getenv("TRAINSIM_SOURCE_DIR");
  const std::string root = src != nullptr ? src : TRAINSIM_TEST_SOURCE_DIR;
  auto loaded = load_sweep(root + "/scenarios/examples/sweeps/gpt3-175b-layouts.textproto");
  ASSERT_TRUE(std::holds_alternative<SweepPlan>(loaded));
  const auto& plan = std::get<SweepPlan>(loaded);
  EXPECT_EQ(plan.size(), 1728u);
  // The last variant: tensor 8, pipeline 32, micro-batch 4, GPipe, full recompute, ZeRO-1, 400 Gb/s.
  const Scenario last = plan.variant(plan.size() - 1);
  EXPECT_FALSE(plan.broken_constraint(last).has_value());
  EXPECT_TRUE(std::holds_alternative<LoadedScenario>(plan.load(last)));
  EXPECT_EQ(plan.axis_values(plan.size() - 1),
            (std::vector<std::string>{"8", "32", "4", "gpipe", "full", "1", "400"}));
}

TEST(Sweep, ScalarFieldsCoverTheScenarioButNotTheSweep) {
  std::vector<std::string> names;
  for (const auto& f : scalar_fields()) names.push_back(f.text);
  EXPECT_NE(std::find(names.begin(), names.end(), "cluster.fabric.fat_tree.oversubscription"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "strategy.recompute_every_k.k"), names.end());
  for (const auto& n : names) EXPECT_FALSE(n.starts_with("sweep")) << n;
}

}  // namespace
}  // namespace trainsim::scenarios
