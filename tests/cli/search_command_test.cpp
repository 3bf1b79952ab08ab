// `trainsim search`: the same report for any thread count, and pruning that changes nothing
// about the top-k (compared with simulating every candidate).
#include "cli/search_command.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace trainsim::cli {
namespace {

namespace fs = std::filesystem;

// GPT 1.7B on one DGX A100 node with a batch of 16 and micro-batch 1: a space of a few
// hundred candidates, a millisecond each.
const char* const SMALL = R"(model { preset: "gpt-1.7b" }
training { sequence_length: 2048 global_batch_size: 16 precision: BF16 }
cluster { preset: "dgx-a100-80gb" nodes: 1 }
)";

class SearchCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("trainsim_search_test_" + std::to_string(::getpid()) + ".textproto")).string();
    std::ofstream(path_) << SMALL;
  }
  void TearDown() override { fs::remove(path_); }

  std::string search(unsigned threads, bool prune, int top = 5) {
    SearchOptions o;
    o.scenario_path = path_;
    o.threads = threads;
    o.prune = prune;
    o.top = top;
    o.max_micro_batch = 1;
    o.progress = false;
    std::ostringstream out, err;
    EXPECT_EQ(search_command(o, out, err), 0) << err.str();
    return out.str();
  }
  static std::string top_table(const std::string& report) {
    const std::size_t begin = report.find("\ntop ");
    return begin == std::string::npos ? "" : report.substr(begin);
  }

  std::string path_;
};

TEST_F(SearchCommand, TheReportIsTheSameForAnyThreadCount) {
  const std::string one = search(1, true);
  EXPECT_EQ(one, search(3, true));
  EXPECT_NE(one.find("top 5 by throughput"), std::string::npos) << one;
  EXPECT_NE(one.find("why #1 beats #2"), std::string::npos) << one;
  EXPECT_EQ(one.find("WARNING"), std::string::npos) << one;
}

TEST_F(SearchCommand, PruningLeavesTheTopKAsSimulatingEverything) {
  const std::string pruned = search(2, true);
  const std::string everything = search(2, false);
  EXPECT_EQ(top_table(pruned), top_table(everything));
  // Simulating everything checks the time bound on every candidate: never above the time.
  EXPECT_EQ(everything.find("WARNING"), std::string::npos) << everything;
  EXPECT_NE(pruned.find("pruned by the time lower bound"), std::string::npos);
}

// --csv and --jsonl write every candidate of the space, in enumeration order, with what the
// search made of it: the same bytes for 1 and 3 threads, a row per candidate, the statuses
// counted as the report counts them, and the rank-1 row the report's best.
TEST_F(SearchCommand, TheTableHoldsEveryCandidateAndWhatBecameOfIt) {
  const std::string dir = fs::path(path_).replace_extension("").string();
  auto run = [&](unsigned threads, const std::string& tag) {
    SearchOptions o;
    o.scenario_path = path_;
    o.threads = threads;
    o.max_micro_batch = 2;
    o.top = 3;
    o.progress = false;
    o.csv_path = dir + tag + ".csv";
    o.jsonl_path = dir + tag + ".jsonl";
    std::ostringstream out, err;
    EXPECT_EQ(search_command(o, out, err), 0) << err.str();
    return out.str();
  };
  const std::string report = run(1, "a");
  run(3, "b");
  const auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fs::remove(path);
    return text;
  };
  const std::string csv = read(dir + "a.csv"), jsonl = read(dir + "a.jsonl");
  EXPECT_EQ(csv, read(dir + "b.csv"));
  EXPECT_EQ(jsonl, read(dir + "b.jsonl"));

  EXPECT_EQ(csv.rfind("candidate,tensor,pipeline,data,", 0), 0u) << csv.substr(0, 200);
  std::map<std::string, std::uint64_t> statuses;
  std::string best_layout;
  double best_seconds = 0;
  std::uint64_t rows = 0;
  std::istringstream lines(jsonl);
  for (std::string line; std::getline(lines, line); ++rows) {
    const auto row = nlohmann::json::parse(line);
    EXPECT_EQ(row["candidate"], rows) << line;
    ++statuses[row["status"].get<std::string>()];
    if (row["rank"] == 1) {
      best_layout = row["layout"];
      best_seconds = row["iteration_s"];
    }
  }
  // The CSV: a header and a line per candidate (no cell breaks a line).
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<std::ptrdiff_t>(rows + 1));
  const auto count_in_report = [&](const std::string& label) {
    const std::size_t at = report.find(label);
    EXPECT_NE(at, std::string::npos) << label << "\n" << report;
    return at == std::string::npos ? 0 : std::stoull(report.substr(at + label.size()));
  };
  EXPECT_EQ(rows, count_in_report("layout space: "));
  EXPECT_EQ(statuses["fit"], count_in_report("(fit: "));
  EXPECT_EQ(statuses["fit"] + statuses["out-of-memory"] + statuses["failed"], count_in_report("simulated: "));
  EXPECT_EQ(statuses["pruned-memory-states"], count_in_report("model states alone: "));
  EXPECT_EQ(statuses["pruned-memory-activations"], count_in_report("at its first backward: "));
  const std::size_t time_line = report.find("pruned by the time lower bound");
  ASSERT_NE(time_line, std::string::npos) << report;
  EXPECT_EQ(statuses["pruned-time"], std::stoull(report.substr(report.find("): ", time_line) + 3)));
  EXPECT_GT(statuses["fit"], 0u);
  EXPECT_GT(statuses["pruned-time"], 0u);
  // The report's first row: "    1      0.2041 …  t2 p1 d4 …"; the table's rank-1 layout and time.
  const std::size_t top = report.find("\n    1 ");
  ASSERT_NE(top, std::string::npos) << report;
  const std::string first = report.substr(top + 1, report.find('\n', top + 1) - top - 1);
  ASSERT_FALSE(best_layout.empty());
  EXPECT_NE(first.find(best_layout), std::string::npos) << first << " vs " << best_layout;
  EXPECT_NE(first.find(fmt::format("{:.4f}", best_seconds)), std::string::npos) << first << " vs " << best_seconds;

  // A table over the scenario itself is refused before anything runs.
  SearchOptions over;
  over.scenario_path = path_;
  over.csv_path = path_;
  over.progress = false;
  std::ostringstream out, err;
  EXPECT_EQ(search_command(over, out, err), 1);
  EXPECT_NE(err.str().find("--csv"), std::string::npos) << err.str();
  EXPECT_TRUE(out.str().empty()) << out.str();
}

// The time bound prunes only if it is never above a candidate's simulated time. Checked on
// every candidate of four spaces, simulated without pruning: the fixture's (GPT 1.7B, A100,
// BF16), GPT-3 175B on 64 A100 (GEMM-bound: its bound comes within 2 % of the time),
// Llama-3 8B in FP8 on an H100 node (causal attention at sequence 8,192, which runs half its
// FLOPs; FP8 linear layers beside BF16 attention and output layer) and GPT 1.7B on 4 H100
// nodes behind 100 Gb/s NICs and 2:1 oversubscribed leaves of two nodes (data-parallel rings
// across leaves, where the collectives the bound counts contend).
TEST_F(SearchCommand, TheTimeBoundIsNeverAboveTheSimulatedTime) {
  const std::pair<const char*, std::string> spaces[] = {
      {"gpt-1.7b, 8 A100", SMALL},
      {"gpt3-175b, 64 A100", R"(model { preset: "gpt3-175b" }
training { sequence_length: 2048 global_batch_size: 16 precision: BF16 }
cluster { preset: "dgx-a100-80gb" nodes: 8 }
)"},
      {"llama3-8b FP8, 8 H100", R"(model { preset: "llama3-8b" }
training { sequence_length: 8192 global_batch_size: 16 precision: FP8 }
cluster { preset: "dgx-h100" nodes: 1 }
)"},
      {"gpt-1.7b, 32 H100 oversubscribed", R"(model { preset: "gpt-1.7b" }
training { sequence_length: 2048 global_batch_size: 32 precision: BF16 }
cluster { preset: "dgx-h100" nodes: 4
          fabric { kind: "fat-tree" fat_tree { nic_gbps: 100 oversubscription: 2 nodes_per_leaf: 2 } } }
)"}};
  const std::string table = fs::path(path_).replace_extension("bounds.jsonl").string();
  for (const auto& [name, scenario] : spaces) {
    std::ofstream(path_) << scenario;
    SearchOptions o;
    o.scenario_path = path_;
    o.threads = 2;
    o.prune = false;
    o.max_micro_batch = 1;
    o.progress = false;
    o.jsonl_path = table;
    std::ostringstream out, err;
    ASSERT_EQ(search_command(o, out, err), 0) << name << "\n" << err.str();
    EXPECT_EQ(out.str().find("WARNING"), std::string::npos) << name << "\n" << out.str();
    std::ifstream in(table);
    std::size_t simulated = 0;
    double closest = 0;
    for (std::string line; std::getline(in, line);) {
      const auto row = nlohmann::json::parse(line);
      if (!row["iteration_s"].is_number()) continue;
      ++simulated;
      const double bound = row["time_lower_bound_s"], seconds = row["iteration_s"];
      EXPECT_LE(bound, seconds) << name << ": " << row["layout"];
      closest = std::max(closest, bound / seconds);
    }
    std::printf("%s: %zu candidates simulated, time bound at most %.3f of the simulated time\n", name, simulated,
                closest);
    EXPECT_GT(simulated, 100u) << name;
    fs::remove(table);
  }
}

// The search chooses the layout, so the one a scenario writes is set aside unread: a
// layout no run could take (tensor 3 on 8 GPUs, a batch of 12 that data 8 does not divide,
// a ZeRO stage that does not exist) does not stop it, and stderr names what was set aside.
// The same search without those fields gives the same report. Errors elsewhere still stop
// it, and so does a space with no layout at all.
TEST_F(SearchCommand, TheWrittenLayoutIsSetAsideAndOnlyTheRestMustLoad) {
  struct Outcome {
    int rc;
    std::string out, err;
  };
  auto search_of = [&](const std::string& scenario) {
    std::ofstream(path_) << scenario;
    SearchOptions o;
    o.scenario_path = path_;
    o.threads = 1;
    o.max_micro_batch = 1;
    o.progress = false;
    std::ostringstream out, err;
    const int rc = search_command(o, out, err);
    std::string report = out.str();
    report.erase(0, report.find('\n'));  // the first line names the file
    return Outcome{rc, report, err.str()};
  };
  const std::string model_and_cluster = R"(model { preset: "gpt-1.7b" }
cluster { preset: "dgx-a100-80gb" nodes: 1 }
)";
  const std::string twelve =
      model_and_cluster + "training { sequence_length: 2048 global_batch_size: 12 precision: BF16 }\n";
  const Outcome bare = search_of(twelve);
  ASSERT_EQ(bare.rc, 0) << bare.err;
  EXPECT_EQ(bare.err.find("not read"), std::string::npos) << bare.err;
  EXPECT_NE(bare.out.find("top 10 by throughput"), std::string::npos) << bare.out;
  const Outcome written = search_of(model_and_cluster +
                                    "training { sequence_length: 2048 global_batch_size: 12 precision: BF16 "
                                    "micro_batch_size: 5 }\n"
                                    "parallel { tensor: 3 sequence_parallel: true context: 1 }\n"
                                    "strategy { zero_stage: 7 pipeline_schedule: \"zigzag\" }\n");
  ASSERT_EQ(written.rc, 0) << written.err;
  EXPECT_NE(written.err.find("search: parallel.tensor, parallel.sequence_parallel, training.micro_batch_size, "
                             "strategy.pipeline_schedule, strategy.zero_stage: not read, the search chooses the "
                             "layout, the micro-batch and the strategies"),
            std::string::npos)
      << written.err;
  EXPECT_EQ(written.out, bare.out);

  // What the search does not choose is still checked: context parallelism, the model.
  const Outcome context = search_of(twelve + "parallel { tensor: 3 context: 2 }\n");
  EXPECT_EQ(context.rc, 1);
  EXPECT_NE(context.err.find("error: parallel.context: context=2 is not supported yet"), std::string::npos)
      << context.err;
  EXPECT_EQ(context.err.find("parallel.tensor"), std::string::npos) << context.err;
  const Outcome model = search_of(R"(model { preset: "gpt-9z" }
training { sequence_length: 2048 global_batch_size: 16 precision: BF16 }
cluster { preset: "dgx-a100-80gb" nodes: 1 }
)");
  EXPECT_EQ(model.rc, 1);
  EXPECT_NE(model.err.find("model.preset"), std::string::npos) << model.err;

  // 25 heads take tensor 1 only, 3 layers pipeline 1 or 2 only (an uneven split needs 3
  // stages, and 8 GPUs do not divide by 3): data is 8 or 4, and a batch of 6 with
  // micro-batch 1 divides by neither.
  const Outcome none = search_of(R"(model { num_layers: 3 hidden_size: 1600 num_attention_heads: 25 vocab_size: 50304
        max_position_embeddings: 2048 }
training { sequence_length: 2048 global_batch_size: 6 precision: BF16 }
cluster { preset: "dgx-a100-80gb" nodes: 1 }
)");
  EXPECT_EQ(none.rc, 1);
  EXPECT_NE(none.err.find("error: training.global_batch_size: no layout of the 8 GPUs takes a global batch of 6: "
                          "tensor must divide the 25 attention heads"),
            std::string::npos)
      << none.err;
}

}  // namespace
}  // namespace trainsim::cli
