#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <fstream>
#include <sstream>

#include "cli/report.hpp"
#include "cli/run_command.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli {
namespace {

std::string example(const std::string& name) {
  const char* src = std::getenv("TRAINSIM_SOURCE_DIR");
  return std::string(src ? src : ".") + "/scenarios/examples/" + name;
}

struct Outcome {
  int code;
  std::string out, err;
};

Outcome run(const RunOptions& o) {
  std::ostringstream out, err;
  const int code = run_command(o, out, err);
  return {code, out.str(), err.str()};
}

TEST(RunCommand, ReportNamesEveryFigure) {
  RunOptions o;
  o.scenario_path = example("gpt-1.7b-a100-32.textproto");
  const auto r = run(o);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* key : {"time", "tokens/s", "samples/s", "model TFLOP/s/GPU", "MFU", "compute", "recompute",
                          "exposed tensor-parallel comm", "exposed data-parallel comm", "pipeline bubble", "weights",
                          "gradients", "optimizer_states", "activations", "comm_buffers", "cuda_context",
                          "cublas_workspace", "peak", "fits", "Most expensive ops of a transformer layer", "fc1"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
}

TEST(RunCommand, SameScenarioGivesByteIdenticalReports) {
  for (auto fidelity : {strategies::Fidelity::FULL, strategies::Fidelity::FAST}) {
    RunOptions o;
    o.scenario_path = example("gpt-1.7b-a100-32.textproto");
    o.fidelity = fidelity;
    const auto a = run(o), b = run(o);
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
  }
}

TEST(RunCommand, JsonReportCarriesSchemaVersionAndTheFigures) {
  const auto path = std::filesystem::temp_directory_path() / "trainsim_run_command_test.json";
  RunOptions o;
  o.scenario_path = example("gpt-1.7b-a100-32.textproto");
  o.json_path = path.string();
  const auto r = run(o);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(path);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("schema_version"), 1);
  EXPECT_GT(j.at("iteration").at("time_s").get<double>(), 0);
  EXPECT_GT(j.at("iteration").at("mfu").get<double>(), 0);
  const auto& tb = j.at("time_breakdown");
  const double sum = tb.at("compute_s").get<double>() + tb.at("recompute_s").get<double>() +
                     tb.at("optimizer_s").get<double>() + tb.at("bubble_s").get<double>() +
                     tb.at("exposed_comm_s").at("tensor_parallel").get<double>() +
                     tb.at("exposed_comm_s").at("data_parallel").get<double>() +
                     tb.at("exposed_comm_s").at("pipeline").get<double>();
  EXPECT_NEAR(sum, j.at("iteration").at("time_s").get<double>(), 1e-9);
  EXPECT_FALSE(j.at("memory").at("out_of_memory").get<bool>());
  std::filesystem::remove(path);
}

TEST(RunCommand, MissingFileIsAnErrorNotACrash) {
  RunOptions o;
  o.scenario_path = "/nonexistent/scenario.textproto";
  const auto r = run(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/scenario.textproto"), std::string::npos) << r.err;
}

TEST(RunCommand, UnwritableJsonPathIsReported) {
  RunOptions o;
  o.scenario_path = example("gpt-1.7b-a100-32.textproto");
  o.json_path = "/nonexistent-dir/report.json";
  const auto r = run(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot open for writing"), std::string::npos) << r.err;
}

TEST(RunCommand, TraceIsTraceEventJsonWithAProcessPerGpu) {
  const auto path = std::filesystem::temp_directory_path() / "trainsim_run_command_trace.json";
  RunOptions o;
  o.scenario_path = example("gpt-1.7b-a100-32.textproto");
  o.fidelity = strategies::Fidelity::FAST;
  o.trace_path = path.string();
  const auto r = run(o);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(path);
  const auto j = nlohmann::json::parse(f);
  std::set<int> pids;
  std::map<std::string, int> flow_ends;  // id → +1 for "s", −1 for "f"
  std::size_t complete = 0;
  for (const auto& e : j.at("traceEvents")) {
    for (const char* key : {"name", "ph", "pid", "tid", "ts"}) ASSERT_TRUE(e.contains(key)) << e.dump();
    const std::string ph = e.at("ph");
    pids.insert(e.at("pid").get<int>());
    if (ph == "X") {
      ++complete;
      EXPECT_GE(e.at("dur").get<double>(), 0);
    }
    if (ph == "s") ++flow_ends[e.at("id").dump()];
    if (ph == "f") --flow_ends[e.at("id").dump()];
  }
  EXPECT_EQ(pids.size(), 1u);  // fast fidelity: one rank for the one stage
  EXPECT_GT(complete, 0u);
  for (const auto& [id, balance] : flow_ends) EXPECT_EQ(balance, 0) << "flow " << id;
  std::filesystem::remove(path);
}

// ---------------------------------------------------------------------------------------
// Pipelines written out: `passes:` gives the same report as the strategy block it spells.

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The text report of `text` loaded as if it were `file`, fast fidelity.
std::string report_of(const std::string& text, const std::string& file) {
  auto loaded = scenarios::load_text(text, file);
  if (auto* d = std::get_if<std::vector<scenarios::Diagnostic>>(&loaded)) {
    std::string all;
    for (const auto& e : *d) all += e.str() + "\n";
    ADD_FAILURE() << all;
    return {};
  }
  return simulate_scenario(std::get<scenarios::LoadedScenario>(loaded), strategies::Fidelity::FAST).text;
}

TEST(Passes, AWrittenPipelineGivesTheSameReportAsItsStrategyBlock) {
  const std::regex block(R"(strategy\s*\{[^}]*\})");
  // Strategy blocks that set every field (a defaulted one adds a "defaulted" note to the
  // report, which a written pipeline has no reason to say).
  struct Case {
    std::string file, strategy;  // strategy: replaces the example's block ("" keeps it)
  };
  const std::vector<Case> cases = {
      {"gpt-1.7b-a100-32.textproto", R"(strategy { pipeline_schedule: "1f1b" zero_stage: 0 recompute: "none" })"},
      {"gpt3-175b-a100-1024.textproto", ""},
      {"llama3-70b-h100-512.textproto", ""},
      {"gpt3-175b-a100-1024.textproto",
       R"(strategy { pipeline_schedule: "1f1b" zero_stage: 0 recompute: "every-k" recompute_every_k { k: 2 } })"},
      {"llama3-70b-h100-512.textproto",
       R"(strategy { pipeline_schedule: "interleaved-1f1b" zero_stage: 1 recompute: "selective" overlap_tp_comm: true })"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file + " " + c.strategy);
    const std::string path = example(c.file);
    const std::string base = read(path);
    ASSERT_TRUE(std::regex_search(base, block));
    const std::string original = c.strategy.empty() ? base : std::regex_replace(base, block, c.strategy);
    auto loaded = scenarios::load_text(original, path);
    ASSERT_TRUE(std::holds_alternative<scenarios::LoadedScenario>(loaded));
    const std::string pipeline =
        strategies::build_program(std::get<scenarios::LoadedScenario>(loaded).training).pipeline_string();
    const std::string written = std::regex_replace(base, block, "strategy { passes: \"" + pipeline + "\" }");
    const std::string a = report_of(original, path), b = report_of(written, path);
    EXPECT_NE(a.find("passes    " + pipeline + "\n"), std::string::npos) << a;
    EXPECT_EQ(a, b);
  }
}

TEST(Passes, ListingShowsEveryPassWithItsParameters) {
  const std::string text = passes_text();
  for (const auto& p : strategies::all_passes()) {
    EXPECT_NE(text.find(p.signature()), std::string::npos) << p.signature();
    EXPECT_NE(text.find(p.description), std::string::npos) << p.name;
  }
  for (const char* line : {"tensor(size,sp)", "pipeline(size,v=1,first=0,last=0)", "recompute(every-k,k=…)",
                           "    k      integer ≥ 1, required", "    v      integer ≥ 1, default 1",
                           "    sp     flag", "requires: zero before:overlap-tp-comm before:schedule"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(Passes, EveryKWithKOneReportsWhatFullDoes) {
  const std::regex block(R"(strategy\s*\{[^}]*\})");
  const std::string path = example("gpt3-175b-a100-1024.textproto");
  const std::string original = read(path);
  std::string full = report_of(std::regex_replace(original, block, R"(strategy { recompute: "full" })"), path);
  ASSERT_FALSE(full.empty());
  std::string one = report_of(
      std::regex_replace(original, block, R"(strategy { recompute: "every-k" recompute_every_k { k: 1 } })"), path);
  const std::regex passes_line("passes    [^\n]*\n");
  EXPECT_NE(full, one);  // the passes line names the policy
  EXPECT_EQ(std::regex_replace(full, passes_line, ""), std::regex_replace(one, passes_line, ""));
}

}  // namespace
}  // namespace trainsim::cli
