// `trainsim diff`: the terms of two scenarios side by side, and each one's critical path —
// a chain of tasks, each starting after the one before it ended, ending with the iteration.
#include "cli/diff_command.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

#include "cli/detail/critical_path.hpp"
#include "hardware/cost_model.hpp"
#include "scenarios/loader.hpp"
#include "sim/simulate.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli {
namespace {

namespace fs = std::filesystem;

std::string example(const std::string& name) {
  const char* src = std::getenv("TRAINSIM_SOURCE_DIR");
  return std::string(src != nullptr ? src : ".") + "/scenarios/examples/" + name;
}

TEST(CriticalPath, IsAChainOfTasksEndingWithTheIteration) {
  for (auto fidelity : {strategies::Fidelity::FAST, strategies::Fidelity::FULL}) {
    auto loaded = scenarios::load_file(example("gpt-1.7b-a100-32.textproto"));
    const auto& s = std::get<scenarios::LoadedScenario>(loaded);
    const hardware::Cluster cluster(s.cluster, s.gpu);
    const hardware::CostModel cost(s.gpu);
    const auto program = strategies::build_program(s.training);
    const auto lowered = strategies::lower(program, cluster, cost, fidelity);
    const auto timeline = sim::simulate(lowered.plan, lowered.network);
    const auto path = detail::critical_path(lowered.plan, timeline);
    ASSERT_FALSE(path.empty());
    EXPECT_EQ(timeline.end[path.back()], timeline.makespan);
    for (std::size_t i = 1; i < path.size(); ++i) {
      // Each task started no earlier than its cause ended (a collective's members end together).
      EXPECT_GE(timeline.start[path[i]], timeline.end[path[i - 1]]) << i;
    }
    double on_path = 0;
    for (const auto& op : detail::summarize_path(lowered.plan, timeline, path)) on_path += op.seconds;
    EXPECT_LE(on_path, timeline.makespan.seconds() * (1 + 1e-12));
    EXPECT_GT(on_path, 0.5 * timeline.makespan.seconds());
  }
}

TEST(Diff, ShowsEveryTermAndWhatChanged) {
  const std::string a = example("gpt3-175b-a100-1024.textproto");
  // The same run with selective instead of full recompute: less recompute time.
  std::ifstream in(a);
  std::stringstream text;
  text << in.rdbuf();
  std::string b_text = text.str();
  const std::size_t at = b_text.find("recompute: \"full\"");
  ASSERT_NE(at, std::string::npos);
  b_text.replace(at, 17, "recompute: \"selective\"");
  const fs::path b = fs::temp_directory_path() / ("trainsim_diff_" + std::to_string(::getpid()) + ".textproto");
  std::ofstream(b) << b_text;
  DiffOptions o;
  o.a_path = a;
  o.b_path = b.string();
  std::ostringstream out, err;
  ASSERT_EQ(diff_command(o, out, err), 0) << err.str();
  fs::remove(b);
  const std::string report = out.str();
  for (const char* term : {"iteration (s)", "compute (s)", "recompute (s)", "exposed tensor-parallel comm (s)",
                           "exposed data-parallel comm (s)", "exposed pipeline comm (s)", "pipeline bubble / idle (s)",
                           "activations (GiB)", "critical path of A", "critical path of B"})
    EXPECT_NE(report.find(term), std::string::npos) << term << "\n" << report;
  EXPECT_NE(report.find("recompute(selective)"), std::string::npos) << report;
  // The recompute row falls (B − A negative).
  const std::size_t row = report.find("  recompute (s)");
  ASSERT_NE(row, std::string::npos);
  const std::string line = report.substr(row, report.find('\n', row) - row);
  EXPECT_NE(line.find(" -"), std::string::npos) << line;
}

TEST(Diff, BadFilesAreErrorsForEach) {
  DiffOptions o;
  o.a_path = "/nonexistent/a.textproto";
  o.b_path = "/nonexistent/b.textproto";
  std::ostringstream out, err;
  EXPECT_EQ(diff_command(o, out, err), 1);
  EXPECT_NE(err.str().find("a.textproto: error: cannot read file"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("b.textproto: error: cannot read file"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace trainsim::cli
