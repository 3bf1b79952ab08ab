// `trainsim search`: the same report for any thread count, and pruning that changes nothing
// about the top-k (compared with simulating every candidate).
#include "cli/search_command.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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
  EXPECT_NE(pruned.find("pruned by the compute-only time bound"), std::string::npos);
}

// A scenario whose written layout the cluster or batch cannot take fails to load, as for a
// run, with the loader's diagnostics; when that is all that failed the search says that it
// chooses the layout itself and what the written one must satisfy. Other errors get no such
// line.
TEST_F(SearchCommand, LayoutOnlyLoadErrorsSayTheSearchChoosesTheLayout) {
  const std::string hint = "search: the search chooses the parallel layout";
  auto errors_for = [&](const std::string& scenario) {
    std::ofstream(path_) << scenario;
    SearchOptions o;
    o.scenario_path = path_;
    o.progress = false;
    std::ostringstream out, err;
    EXPECT_EQ(search_command(o, out, err), 1);
    return err.str();
  };
  // 8 GPUs do not take tensor 3; a batch of 12 does not divide by data 8.
  const std::string tensor = errors_for(std::string(SMALL) + "parallel { tensor: 3 }\n");
  EXPECT_NE(tensor.find("parallel."), std::string::npos) << tensor;
  EXPECT_NE(tensor.find(hint), std::string::npos) << tensor;
  const std::string batch = errors_for(R"(model { preset: "gpt-1.7b" }
training { sequence_length: 2048 global_batch_size: 12 precision: BF16 }
cluster { preset: "dgx-a100-80gb" nodes: 1 }
)");
  EXPECT_NE(batch.find("training.global_batch_size"), std::string::npos) << batch;
  EXPECT_NE(batch.find(hint), std::string::npos) << batch;
  const std::string model = errors_for(R"(model { preset: "gpt-9z" }
training { sequence_length: 2048 global_batch_size: 16 precision: BF16 }
cluster { preset: "dgx-a100-80gb" nodes: 1 }
)");
  EXPECT_NE(model.find("model.preset"), std::string::npos) << model;
  EXPECT_EQ(model.find(hint), std::string::npos) << model;
}

}  // namespace
}  // namespace trainsim::cli
