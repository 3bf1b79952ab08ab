#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <fstream>
#include <sstream>

#include "cli/run_command.hpp"

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
                          "gradients", "optimizer_states", "activations", "comm_buffers", "peak", "fits"})
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

}  // namespace
}  // namespace trainsim::cli
