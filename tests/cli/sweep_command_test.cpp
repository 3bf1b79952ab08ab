// `trainsim sweep`: one row per variant in variant order whatever the thread count, the
// memory bound never above what the simulation finds, and a sweep killed half way — for
// real, by SIGKILL, and by the --stop-after hook that leaves a row half written — resumed
// to the same table as one run straight through.
#include "cli/sweep_command.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/detail/evaluate.hpp"
#include "scenarios/layout_space.hpp"
#include "scenarios/memory_bound.hpp"
#include "scenarios/sweep.hpp"
#include "strategies/program.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli {
namespace {

namespace fs = std::filesystem;

// 4 × 3 × 4 × 3 = 144 variants of the small example; tensor 8 × pipeline 4 with data 1
// and a micro-batch of 8 leaves some invalid (batch not divisible), none fails to build.
const char* const SMALL_SWEEP = R"(name: "gpt-1.7b-sweep"
model { preset: "gpt-1.7b" }
training { sequence_length: 2048 global_batch_size: 512 micro_batch_size: 1 precision: FP16 attention: UNFUSED }
cluster { preset: "dgx-a100-80gb" nodes: 4 }
strategy { pipeline_schedule: "1f1b" }
sweep {
  axis { field: "parallel.tensor" values: ["1", "2", "4", "8"] }
  axis { field: "parallel.pipeline" values: ["1", "2", "4"] }
  axis { field: "training.micro_batch_size" values: ["1", "2", "4", "3"] }
  axis { field: "strategy.recompute" values: ["none", "selective", "full"] }
  constraint: "parallel.tensor * parallel.pipeline <= 16"
}
)";

// GPT-3 175B on 1,024 A100: slow enough per variant (milliseconds) to be
// killed half way; 3 × 4 × 4 = 48 variants.
const char* const GPT3_SWEEP = R"(name: "gpt3-sweep"
model { preset: "gpt3-175b" }
training { sequence_length: 2048 global_batch_size: 1536 precision: FP16 attention: UNFUSED }
cluster { preset: "dgx-a100-80gb" nodes: 128 }
parallel { tensor: 8 }
strategy { pipeline_schedule: "1f1b" recompute: "full" }
sweep {
  axis { field: "parallel.pipeline" values: ["8", "16", "32"] }
  axis { field: "cluster.fabric.fat_tree.nic_gbps" values: ["100", "200", "400", "800"] }
  axis { field: "cluster.fabric.fat_tree.oversubscription" values: ["1", "2", "4", "8"] }
}
)";

class SweepCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trainsim_sweep_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static std::size_t lines(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

  SweepOptions options(const std::string& sweep, const std::string& stem, unsigned threads) {
    SweepOptions o;
    o.sweep_path = sweep;
    o.csv_path = (dir_ / (stem + ".csv")).string();
    o.jsonl_path = (dir_ / (stem + ".jsonl")).string();
    o.threads = threads;
    o.progress = false;
    return o;
  }

  int run(const SweepOptions& o, std::string* out_text = nullptr, std::string* err_text = nullptr) {
    std::ostringstream out, err;
    const int status = sweep_command(o, out, err);
    if (out_text) *out_text = out.str();
    if (err_text) *err_text = err.str();
    return status;
  }

  fs::path dir_;
};

TEST_F(SweepCommand, OneRowPerVariantInOrderForAnyThreadCount) {
  const std::string sweep = write("small.textproto", SMALL_SWEEP);
  std::string summary, errors;
  ASSERT_EQ(run(options(sweep, "one", 1), &summary, &errors), 0) << errors;
  ASSERT_EQ(run(options(sweep, "three", 3)), 0);
  const std::string csv = read((dir_ / "one.csv").string());
  const std::string jsonl = read((dir_ / "one.jsonl").string());
  EXPECT_EQ(csv, read((dir_ / "three.csv").string()));
  EXPECT_EQ(jsonl, read((dir_ / "three.jsonl").string()));
  EXPECT_EQ(lines(csv), 145u);  // header + 144
  EXPECT_EQ(lines(jsonl), 144u);
  // Rows in variant order; the first variant: tensor 1, pipeline 1, micro-batch 1, no recompute.
  std::istringstream rows(csv);
  std::string line;
  std::getline(rows, line);
  EXPECT_TRUE(line.starts_with("variant,sweep_id,status,reason,name,model.preset,"));
  for (int i = 0; std::getline(rows, line); ++i) ASSERT_TRUE(line.starts_with(std::to_string(i) + ",")) << line;
  // tensor 8 × pipeline 4 = 32 breaks the constraint: 12 variants; micro-batch 3 does not
  // divide the batch: counted under the loader's own message.
  EXPECT_NE(summary.find("dropped by a constraint 12"), std::string::npos) << summary;
  EXPECT_NE(summary.find("constraint parallel.tensor * parallel.pipeline <= 16"), std::string::npos) << summary;
  EXPECT_NE(summary.find("micro_batch_size"), std::string::npos) << summary;
  // Every simulated row carries its figures; JSON Lines parse.
  EXPECT_NE(jsonl.find("\"status\":\"ok\""), std::string::npos);
  EXPECT_NE(jsonl.find("\"iteration_s\":"), std::string::npos);
  EXPECT_EQ(jsonl.find("\"status\":\"error\""), std::string::npos) << jsonl.substr(0, 2000);
}

// Each figure under its own name: a simulated row's memory columns are the report's own
// (every class at the peak, the capacity, whether it fits) and the planning figures follow.
TEST_F(SweepCommand, EveryFigureIsUnderItsOwnColumn) {
  const std::string sweep = write("small.textproto", SMALL_SWEEP);
  ASSERT_EQ(run(options(sweep, "table", 2)), 0);
  std::istringstream rows(read((dir_ / "table.csv").string()));
  std::string line;
  auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char ch : text) {
      if (ch == '"') quoted = !quoted;
      else if (ch == ',' && !quoted) cells.push_back(std::exchange(cell, {}));
      else cell += ch;
    }
    cells.push_back(cell);
    return cells;
  };
  std::getline(rows, line);
  const std::vector<std::string> header = split(line);
  auto column = [&](const std::string& name) {
    const auto at = std::find(header.begin(), header.end(), name);
    EXPECT_NE(at, header.end()) << name;
    return static_cast<std::size_t>(at - header.begin());
  };
  const char* const classes[] = {"weights",      "gradients",    "optimizer_states", "activations",
                                 "comm_buffers", "cuda_context", "cublas_workspace"};
  for (const char* cls : classes) (void)column(std::string("memory.") + cls + "_bytes");
  int simulated = 0;
  while (std::getline(rows, line)) {
    const std::vector<std::string> cells = split(line);
    ASSERT_EQ(cells.size(), header.size()) << line;
    if (cells[column("status")] != "ok") continue;
    ++simulated;
    // dgx-a100-80gb: 80 GiB as the driver reports it.
    EXPECT_EQ(cells[column("memory.capacity_bytes")], "85899345920") << line;
    const std::string fits = cells[column("memory.out_of_memory")];
    EXPECT_TRUE(fits == "true" || fits == "false") << fits;
    EXPECT_GT(std::stod(cells[column("planning.iterations")]), 1000.0);  // iterations, not a byte count or a flag
    double at_peak = 0;
    for (const char* cls : classes) at_peak += std::stod(cells[column(std::string("memory.") + cls + "_bytes")]);
    EXPECT_NEAR(at_peak, std::stod(cells[column("memory.peak_bytes")]), 1e-6 * at_peak) << line;
  }
  EXPECT_GT(simulated, 50);
}

TEST_F(SweepCommand, TheMemoryLowerBoundNeverExceedsTheSimulatedPeak) {
  const std::string sweep = write("gpt3.textproto", GPT3_SWEEP);
  auto loaded = scenarios::load_sweep(sweep);
  ASSERT_TRUE(std::holds_alternative<scenarios::SweepPlan>(loaded));
  const auto& plan = std::get<scenarios::SweepPlan>(loaded);
  // One variant per pipeline size: the network axes do not move memory.
  for (std::uint64_t i = 0; i < plan.size(); i += 16) {
    auto variant = plan.load(plan.variant(i));
    ASSERT_TRUE(std::holds_alternative<scenarios::LoadedScenario>(variant)) << i;
    const auto& s = std::get<scenarios::LoadedScenario>(variant);
    const double bound = scenarios::model_state_lower_bound_bytes(s.training);
    const report::RunReport r = detail::evaluate_fast(s, true, 0);
    const auto& at = r.memory.at_peak;
    const double states = at[0] + at[1] + at[2];
    EXPECT_LE(bound, r.memory.peak_bytes) << i;
    // Close: the bound counts the states of the transformer layers, the embedding and the
    // head (at 3 layers a stage those two are 13 % of a stage's states).
    EXPECT_GT(bound, 0.99 * states) << i << ": bound " << bound << " states " << states;
  }
}

// The model-state bound is what the Program holds on its fullest stage: the transformer
// layers' states, the embedding's on the first stage, the head's (with the copy of a tied
// embedding, GPT's) on the last, whichever stage the split makes the fullest. BF16 keeps no
// main gradients beside the states, so the two agree exactly.
TEST_F(SweepCommand, TheModelStateBoundIsTheStatesOfTheFullestStage) {
  struct Split {
    const char* model;
    int first, last;  // 0: even
  };
  for (const Split& split : {Split{"gpt-1.7b", 0, 0}, Split{"gpt-1.7b", 8, 4}, Split{"gpt-1.7b", 4, 8},
                             Split{"llama3-8b", 0, 0}, Split{"llama3-8b", 10, 6}, Split{"llama3-8b", 6, 10}}) {
    std::string parallel = "parallel { tensor: 2 pipeline: 4 data: 1";
    if (split.first > 0)
      parallel += " first_stage_layers: " + std::to_string(split.first) +
                  " last_stage_layers: " + std::to_string(split.last);
    const std::string path = write("states.textproto", std::string("model { preset: \"") + split.model + R"(" }
training { sequence_length: 2048 global_batch_size: 8 micro_batch_size: 1 precision: BF16 }
cluster { preset: "dgx-h100" nodes: 1 }
)" + parallel + " }\n");
    auto loaded = scenarios::load_file(path);
    ASSERT_TRUE(std::holds_alternative<scenarios::LoadedScenario>(loaded)) << split.model;
    const strategies::TrainingSpec& spec = std::get<scenarios::LoadedScenario>(loaded).training;
    const strategies::Program program = strategies::build_program(spec);
    ASSERT_EQ(program.roles.size(), 4u);
    std::vector<double> states;
    for (const strategies::Role& role : program.roles) {
      double held = 0;
      for (const auto c : {strategies::MemClass::WEIGHTS, strategies::MemClass::GRADIENTS,
                           strategies::MemClass::OPTIMIZER_STATES})
        held += role.static_bytes[static_cast<int>(c)];
      states.push_back(held);
    }
    const double fullest = *std::max_element(states.begin(), states.end());
    EXPECT_NEAR(scenarios::model_state_lower_bound_bytes(spec), fullest, 1e-9 * fullest)
        << split.model << " first " << split.first << " last " << split.last;
    if (split.first == 0) {
      // Even: the first and last stages hold the embedding and the head beyond a middle one.
      EXPECT_GT(states.front(), states[1]) << split.model;
      EXPECT_GT(states.back(), states[1]) << split.model;
    }
  }
}

// The stages' bound (states and the activations each keeps until its first backward, the
// CUDA runtime and NCCL's buffers) on every kind of layout the search enumerates: each
// schedule, virtual stages, uneven splits, every recompute mode (every-k with each k),
// sequence parallelism, ZeRO, the overlaps, fused and unfused attention, BF16 and FP8 (whose
// weight casts it counts). Never above the simulated peak, or the search would drop a layout
// that fits; and the peak itself where the first backward holds it (pipeline 1).
TEST_F(SweepCommand, TheStageActivationBoundNeverExceedsTheSimulatedPeak) {
  for (const auto& [attention, precision] : {std::pair{"FLASH", "BF16"}, {"UNFUSED", "BF16"}, {"FLASH", "FP8"}}) {
    const std::string path = write("space.textproto", std::string(R"(name: "bound-space"
model { preset: "gpt-1.7b" }
training { sequence_length: 2048 global_batch_size: 64 micro_batch_size: 1 precision: )") +
                                                          precision + " attention: " + attention + R"( }
cluster { preset: "dgx-h100" nodes: 2 }
)");
    auto loaded = scenarios::load_file(path);
    ASSERT_TRUE(std::holds_alternative<scenarios::LoadedScenario>(loaded));
    const auto& base = std::get<scenarios::LoadedScenario>(loaded);
    const auto space = scenarios::enumerate_layouts(base.training, 16);
    ASSERT_GT(space.size(), 1000u);
    std::size_t checked = 0, binding = 0, every_k = 0;
    std::set<std::string> schedules;
    std::set<int> recomputes;
    // A prime stride walks every inner dimension of the enumeration order.
    for (std::size_t i = 0; i < space.size(); i += 13) {
      scenarios::LoadedScenario variant = base;
      variant.training = scenarios::apply_layout(base.training, space[i]);
      const double tensors = scenarios::stage_activation_lower_bound_bytes(variant.training);
      const double bound = scenarios::memory_lower_bound(variant.training, variant.gpu).bytes();
      report::RunReport r;
      try {
        r = detail::evaluate_fast(variant, true, 0);
      } catch (const std::invalid_argument&) {
        continue;  // a layout the strategies refuse (the search counts these as failed)
      }
      ++checked;
      schedules.insert(variant.training.pipeline_schedule);
      recomputes.insert(static_cast<int>(variant.training.recompute));
      EXPECT_LE(bound, r.memory.peak_bytes) << scenarios::describe(space[i]) << " (" << attention << ", " << precision
                                            << ")";
      // Every-k, which reaches the Program as a pass with a parameter, is bounded too.
      if (space[i].recompute == strategies::Recompute::EVERY_K) {
        EXPECT_GT(tensors, 0.0) << scenarios::describe(space[i]);
        ++every_k;
      }
      if (space[i].pipeline == 1) {
        // The peak is the bound's states and activations (the embedding's and the head's
        // among them, and what the first backward recomputes), the runtime's memory and
        // NCCL's buffers, to the byte; selective recompute's peak may come later.
        const double close = space[i].recompute == strategies::Recompute::SELECTIVE ? 0.99 : 1 - 1e-9;
        EXPECT_GE(bound, close * r.memory.peak_bytes) << scenarios::describe(space[i]);
        ++binding;
      }
    }
    EXPECT_GT(checked, 80u);
    EXPECT_GT(binding, 3u);
    EXPECT_EQ(schedules.size(), 3u);
    EXPECT_EQ(recomputes.size(), 4u);
    EXPECT_GT(every_k, 20u);
  }
}

TEST_F(SweepCommand, AHalfWrittenRowIsCutAndTheSweepResumed) {
  const std::string sweep = write("small.textproto", SMALL_SWEEP);
  ASSERT_EQ(run(options(sweep, "straight", 2)), 0);
  // --stop-after exits the process: run it in a child.
  SweepOptions stop = options(sweep, "resumed", 2);
  stop.stop_after = 50;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::ostringstream sink;
    sweep_command(stop, sink, sink);
    ::_exit(0);  // not reached: --stop-after exits with 137
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 137);
  const std::string partial = read(stop.csv_path);
  EXPECT_EQ(lines(partial), 51u);
  EXPECT_NE(partial.back(), '\n');  // half of row 50
  std::string summary;
  ASSERT_EQ(run(options(sweep, "resumed", 2), &summary), 0);
  EXPECT_NE(summary.find("50 rows were already written; resumed after them"), std::string::npos) << summary;
  EXPECT_EQ(read(stop.csv_path), read((dir_ / "straight.csv").string()));
  EXPECT_EQ(read(stop.jsonl_path), read((dir_ / "straight.jsonl").string()));
  // The summary of the resumed run counts the rows written before the kill too.
  std::string straight_summary;
  fs::remove(dir_ / "again.csv");
  ASSERT_EQ(run(options(sweep, "again", 1), &straight_summary), 0);
  EXPECT_EQ(summary.substr(summary.find('\n') + 1, summary.find("wrote") - summary.find('\n') - 1),
            straight_summary.substr(straight_summary.find('\n') + 1,
                                    straight_summary.find("wrote") - straight_summary.find('\n') - 1));
}

TEST_F(SweepCommand, KilledBySigkillHalfWayItResumesWithEveryRowOnce) {
  const std::string sweep = write("gpt3.textproto", GPT3_SWEEP);
  ASSERT_EQ(run(options(sweep, "straight", 2)), 0);
  const SweepOptions o = options(sweep, "killed", 1);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::ostringstream sink;
    ::_exit(sweep_command(o, sink, sink));
  }
  // Kill it once some rows are written, well before the end.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::size_t seen = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    seen = lines(read(o.jsonl_path));
    if (seen >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before it was killed: nothing was tested";
  const std::size_t before = lines(read(o.jsonl_path));
  EXPECT_GE(before, 3u);
  EXPECT_LT(before, 48u);
  std::string summary, errors;
  ASSERT_EQ(run(options(sweep, "killed", 2), &summary, &errors), 0) << errors;
  EXPECT_EQ(read(o.csv_path), read((dir_ / "straight.csv").string()));
  EXPECT_EQ(read(o.jsonl_path), read((dir_ / "straight.jsonl").string()));
  EXPECT_EQ(lines(read(o.jsonl_path)), 48u);
}

TEST_F(SweepCommand, ATableOfAnotherSweepIsNotResumedOrOverwritten) {
  const std::string sweep = write("small.textproto", SMALL_SWEEP);
  const SweepOptions o = options(sweep, "other", 1);
  const std::string foreign = "variant,something,else\n0,1,2\n";
  std::ofstream(o.csv_path) << foreign;
  std::string errors;
  EXPECT_EQ(run(o, nullptr, &errors), 1);
  EXPECT_NE(errors.find(o.csv_path + ": error: its header differs from this version's columns"), std::string::npos)
      << errors;
  EXPECT_EQ(read(o.csv_path), foreign);
  // Another sweep file's rows are refused by its fingerprint.
  ASSERT_EQ(run(options(sweep, "mine", 1)), 0);
  const std::string changed = write("changed.textproto", std::string(SMALL_SWEEP) + "# changed\n");
  SweepOptions c = options(changed, "mine", 1);
  EXPECT_EQ(run(c, nullptr, &errors), 1);
  EXPECT_NE(errors.find("expected variant 0 of sweep"), std::string::npos) << errors;
}

TEST_F(SweepCommand, BadInputIsOneErrorPerProblem) {
  const std::string sweep = write("bad.textproto", std::string(SMALL_SWEEP) + "sweep { axis { field: \"parallel.x\" values: [\"1\"] } }\n");
  std::string errors;
  EXPECT_EQ(run(options(sweep, "bad", 1), nullptr, &errors), 1);
  EXPECT_NE(errors.find("bad.textproto:"), std::string::npos) << errors;
  SweepOptions none = options(write("ok.textproto", SMALL_SWEEP), "x", 1);
  none.csv_path.clear();
  none.jsonl_path.clear();
  EXPECT_EQ(run(none, nullptr, &errors), 1);
  EXPECT_NE(errors.find("name an output: --csv FILE and/or --jsonl FILE"), std::string::npos);
  SweepOptions over = options(none.sweep_path, "x", 1);
  over.csv_path = none.sweep_path;
  EXPECT_EQ(run(over, nullptr, &errors), 1);
  EXPECT_NE(errors.find("--csv"), std::string::npos) << errors;
}

}  // namespace
}  // namespace trainsim::cli
