// Issue 12: no input crashes, overflows or exhausts trainsim. Each case of the issue has a
// test here (or in the loader's and runs table's tests) asserting its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/detail/output_file.hpp"
#include "cli/guard.hpp"
#include "cli/memory_budget.hpp"
#include "cli/report.hpp"
#include "cli/run_command.hpp"
#include "cli/validate_command.hpp"
#include "strategies/plan_size.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string example(const std::string& name) {
  const char* src = std::getenv("TRAINSIM_SOURCE_DIR");
  return std::string(src ? src : ".") + "/scenarios/examples/" + name;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
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

// A folder of its own for each test, removed at the end.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("trainsim-robust-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

fs::path write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// ---- main: nothing escapes as an uncaught exception ----

TEST(Guard, AnythingThrownBecomesOneErrorLineAndStatusOne) {
  std::ostringstream err;
  EXPECT_EQ(guarded([]() -> int { throw std::logic_error("lower: a step depends on a send that was never issued"); },
                    err),
            1);
  EXPECT_EQ(err.str(), "trainsim: error: lower: a step depends on a send that was never issued (an unexpected "
                       "failure, which is a trainsim bug: please report it with the input that caused it)\n");
  err.str("");
  EXPECT_EQ(guarded([]() -> int { throw std::bad_alloc(); }, err), 1);
  EXPECT_THAT(err.str(), StartsWith("trainsim: error: out of memory (the scenario needs more than this machine"));
  err.str("");
  EXPECT_EQ(guarded([]() -> int { throw 42; }, err), 1);
  EXPECT_THAT(err.str(), StartsWith("trainsim: error: an unknown exception"));
  err.str("");
  EXPECT_EQ(guarded([] { return 0; }, err), 0);
  EXPECT_EQ(err.str(), "");
}

// ---- errors with a place ----

TEST(RunErrors, EngineFailuresNameTheScenarioNeverTheTrace) {
  RunOptions o;
  o.scenario_path = "s.textproto";
  o.trace_path = "trace.json";
  const std::runtime_error deadlock("simulate: deadlock at t=0.000000 us (0 ps): 2 of 2 tasks can never finish");
  EXPECT_EQ(simulation_failure(o, deadlock, false),
            "s.textproto: error: simulate: deadlock at t=0.000000 us (0 ps): 2 of 2 tasks can never finish");
  // Only a failed trace write is about the trace file.
  EXPECT_EQ(simulation_failure(o, std::runtime_error("write_chrome_trace: the output stream failed"), true),
            "trace.json: error: write_chrome_trace: the output stream failed");
  // The cost model's own checks get the scenario's name too.
  EXPECT_EQ(simulation_failure(o, std::invalid_argument("kernel bytes must be finite and >= 0"), false),
            "s.textproto: error: kernel bytes must be finite and >= 0");
  // A pass's error names the field that asked for the pass.
  EXPECT_EQ(simulation_failure(o, std::invalid_argument("pass \"zero(1)\": needs data > 1"), false),
            "s.textproto: error: strategy.zero_stage: pass \"zero(1)\": needs data > 1");
  EXPECT_EQ(simulation_failure(o, std::invalid_argument("pass \"interleaved-1f1b\": needs virtual stages"), false),
            "s.textproto: error: strategy.pipeline_schedule: pass \"interleaved-1f1b\": needs virtual stages");
  EXPECT_EQ(simulation_failure(o, std::invalid_argument("strategy pass \"overlap-tp-comm\" is not implemented"),
                               false),
            "s.textproto: error: strategy.overlap_tp_comm: strategy pass \"overlap-tp-comm\" is not implemented");
  // Where the scenario wrote the field, the error points at it.
  EXPECT_EQ(simulation_failure(o, std::invalid_argument("pass \"zero(1)\": needs data > 1"), false,
                               {{"strategy.zero_stage", {7, 14}}}),
            "s.textproto:7:14: error: strategy.zero_stage: pass \"zero(1)\": needs data > 1");
}

// The loader keeps where the pass-asking fields were written.
TEST(RunErrors, LoaderKeepsThePositionsOfTheFieldsThatAskForPasses) {
  const auto loaded = scenarios::load_text(
      "model { preset: \"gpt-1.7b\" }\n"
      "training { sequence_length: 2048 global_batch_size: 16 }\n"
      "cluster { preset: \"dgx-a100-80gb\" nodes: 1 }\n"
      "parallel { tensor: 2 pipeline: 2 }\n"
      "strategy {\n"
      "  zero_stage: 1\n"
      "}\n",
      "s.textproto");
  ASSERT_TRUE(std::holds_alternative<scenarios::LoadedScenario>(loaded));
  const auto& positions = std::get<scenarios::LoadedScenario>(loaded).field_positions;
  ASSERT_TRUE(positions.count("strategy.zero_stage"));
  EXPECT_EQ(positions.at("strategy.zero_stage"), (std::pair<int, int>{6, 3}));
  EXPECT_EQ(positions.at("parallel.tensor").first, 4);
}

// A scenario that passes validation and still outlasts the engine's time range: a slow NIC
// (0.001 Gb/s, the lowest allowed) and a 1.6 TB gradient all-reduce.
TEST(RunErrors, AnIterationBeyondTheTimeRangeIsAnErrorNotANegativeTime) {
  TempDir dir("time");
  const auto path = write(dir.path / "slow.textproto", R"(
model { num_layers: 1 hidden_size: 262144 num_attention_heads: 64 vocab_size: 1024 }
training { sequence_length: 64 global_batch_size: 2 }
cluster { gpu: "a100-80gb" gpus_per_node: 1 nodes: 2 fabric { fat_tree { nic_gbps: 0.001 } } }
parallel { data: 2 }
)");
  RunOptions o;
  o.scenario_path = path.string();
  o.fidelity = strategies::Fidelity::FAST;
  const auto r = run(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, StartsWith(path.string() + ": error: simulate: the iteration lasts longer than the engine's time "
                                                "range: a duration of "));
  EXPECT_THAT(r.err, HasSubstr("is outside the engine's time range (int64 picoseconds: at most 9223372.036855 s, "
                               "about 106 days)"));
}

// ---- unbounded work: refused with the fidelity to use ----

TEST(RunErrors, APlanTooLargeForTheMemoryBudgetNamesTheFidelityToUse) {
  RunOptions o;
  o.scenario_path = example("gpt3-175b-a100-1024.textproto");
  o.max_memory_bytes = 512.0 * 1024 * 1024;  // 512 MiB: the full plan needs about 2 GiB
  const auto r = run(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, StartsWith(o.scenario_path + ": error: the full plan would have about "
                                                  "1.89e+07 tasks and need about "));
  EXPECT_THAT(r.err, HasSubstr("more than the 512 MiB available (--max-memory); use --fidelity fast (one rank per "
                               "pipeline stage: about "));
  // A budget even the program does not fit names the sizes to change instead.
  o.max_memory_bytes = 1024 * 1024;
  const auto tiny = run(o);
  EXPECT_EQ(tiny.code, 1);
  EXPECT_THAT(tiny.err, HasSubstr("error: the run's program would hold about "));
  EXPECT_THAT(tiny.err, HasSubstr("reduce global_batch_size or num_layers, or raise --max-memory"));
}

// The Program estimate is made before the Program exists: it must not fall below what
// build_program makes (else the memory check is no check), nor be so far above that real
// runs are refused.
TEST(PlanSize, EstimatesBoundTheProgramAndThePlanOfTheExamples) {
  for (const char* name : {"gpt-1.7b-a100-32.textproto", "gpt3-175b-a100-1024.textproto",
                           "llama3-70b-h100-512.textproto"}) {
    const auto loaded = scenarios::load_file(example(name));
    ASSERT_TRUE(std::holds_alternative<scenarios::LoadedScenario>(loaded)) << name;
    const auto& spec = std::get<scenarios::LoadedScenario>(loaded).training;
    const strategies::Program program = strategies::build_program(spec);
    const strategies::PlanSize built = strategies::estimate_plan(program, strategies::Fidelity::FULL);
    const strategies::PlanSize ahead = strategies::estimate_program(spec);
    EXPECT_GE(ahead.steps, built.steps) << name;
    EXPECT_LE(ahead.steps, 8 * built.steps) << name;
  }
}

TEST(MaxMemory, SizesParseWithUnits) {
  EXPECT_EQ(parse_bytes("4G"), 4.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_bytes("512M"), 512.0 * 1024 * 1024);
  EXPECT_EQ(parse_bytes("1.5GiB"), 1.5 * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_bytes("2000"), 2000.0);
  EXPECT_FALSE(parse_bytes("-1G"));
  EXPECT_FALSE(parse_bytes("4X"));
  EXPECT_FALSE(parse_bytes("1e309"));
  EXPECT_GT(default_memory_budget(), 0);
}

// "Llama-3 70B in its default fidelity on a 4 GB limit": the default budget follows the
// process's limit (ulimit -d here, set in a child so that this process keeps its own).
TEST(MaxMemory, TheDefaultBudgetFollowsTheProcessLimit) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct rlimit limit {};
    ::getrlimit(RLIMIT_DATA, &limit);
    limit.rlim_cur = rlim_t{4} << 30;
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < limit.rlim_cur) limit.rlim_cur = limit.rlim_max;
    const bool set = ::setrlimit(RLIMIT_DATA, &limit) == 0;
    ::_exit(set && default_memory_budget() <= 0.8 * static_cast<double>(limit.rlim_cur) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// ---- bounded reads ----

TEST(RunErrors, AScenarioThatIsADeviceIsRefusedNotReadForever) {
  TempDir dir("device");
  const auto link = dir.path / "zero.textproto";
  fs::create_symlink("/dev/zero", link);
  RunOptions o;
  o.scenario_path = link.string();
  const auto r = run(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, link.string() + ": error: cannot read file: not a regular file (a device, pipe or socket is not "
                                   "read: /dev/zero, for one, never ends)\n");
}

// ---- non-UTF-8 names never stop the JSON writer ----

TEST(RunErrors, NonUtf8ScenarioPathStillGivesAReportAndJson) {
  TempDir dir("utf8");
  const auto path = dir.path / "bad\xff\xfe.textproto";
  fs::copy_file(example("gpt-1.7b-a100-32.textproto"), path);
  RunOptions o;
  o.scenario_path = path.string();
  o.fidelity = strategies::Fidelity::FAST;
  o.json_path = (dir.path / "r.json").string();
  const auto r = run(o);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(read(o.json_path));
  // Invalid bytes are replaced by U+FFFD.
  EXPECT_THAT(j.at("scenario").get<std::string>(), HasSubstr("bad\xef\xbf\xbd\xef\xbf\xbd.textproto"));
}

TEST(RunErrors, NonUtf8RowNameStillGivesValidationJson) {
  ValidationResult r;
  r.file = "runs\xff.csv";
  RowOutcome row;
  row.name = "row-\xc3";  // a cut UTF-8 sequence
  row.skip_reason = "not simulated";
  r.rows.push_back(row);
  r.skipped = 1;
  const auto j = nlohmann::json::parse(validation_json(r));
  EXPECT_EQ(j.dump().find("\xff"), std::string::npos);
  EXPECT_THAT(j.dump(), HasSubstr("row-\xef\xbf\xbd"));
}

// ---- data loss: outputs written whole, never over an input ----

TEST(Outputs, TraceOverTheScenarioIsRefusedAndTheScenarioKept) {
  TempDir dir("trace-input");
  const auto path = dir.path / "s.textproto";
  fs::copy_file(example("gpt-1.7b-a100-32.textproto"), path);
  const std::string before = read(path);
  RunOptions o;
  o.scenario_path = path.string();
  o.trace_path = path.string();
  auto r = run(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, path.string() + ": error: --trace names the input file " + path.string() +
                       ": writing it would destroy that input (choose another output path)\n");
  EXPECT_EQ(read(path), before);
  // Another spelling of the same file is the same file.
  o.trace_path = (dir.path / "." / "s.textproto").string();
  r = run(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("--trace names the input file"));
  // The two outputs cannot share a file either.
  o.trace_path = (dir.path / "out.json").string();
  o.json_path = o.trace_path;
  r = run(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("error: --json and --trace name the same file (give each output its own path)"));
  EXPECT_EQ(read(path), before);
}

TEST(Outputs, AFailedRunLeavesEarlierOutputsAsTheyWere) {
  TempDir dir("atomic");
  const auto json = write(dir.path / "r.json", "old report");
  const auto trace = write(dir.path / "t.json", "old trace");
  RunOptions o;
  o.scenario_path = example("gpt-1.7b-a100-32.textproto");
  o.json_path = json.string();
  o.trace_path = trace.string();
  o.max_memory_bytes = 1024;  // refused before anything is simulated
  const auto r = run(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(read(json), "old report");
  EXPECT_EQ(read(trace), "old trace");
  EXPECT_FALSE(fs::exists(trace.string() + ".tmp"));
  EXPECT_FALSE(fs::exists(json.string() + ".tmp"));
}

// Root may rename over /dev/null: an output that is a device is written in place.
TEST(Outputs, ADeviceOutputIsWrittenInPlaceNeverReplaced) {
  RunOptions o;
  o.scenario_path = example("gpt-1.7b-a100-32.textproto");
  o.fidelity = strategies::Fidelity::FAST;
  o.json_path = "/dev/null";
  const auto r = run(o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_FALSE(fs::exists("/dev/null.tmp"));
}

TEST(Outputs, ValidateRefusesJsonOverItsTable) {
  TempDir dir("validate");
  const auto table = write(dir.path / "runs.csv", "name\n");
  ValidateOptions o;
  o.table_path = table.string();
  o.json_path = table.string();
  std::ostringstream out, err;
  // The table has errors of its own; they come first. A readable one is needed to reach
  // the output check, which detail::refuse_overwriting_inputs makes directly here.
  EXPECT_EQ(detail::refuse_overwriting_inputs({{"--json", o.json_path}}, {o.table_path}),
            table.string() + ": error: --json names the input file " + table.string() +
                ": writing it would destroy that input (choose another output path)");
  EXPECT_EQ(validate_command(o, out, err), 1);
  EXPECT_EQ(read(table), "name\n");
}

// A trainsim process does not load cuBLASLt unless it measures (`calibrate --measure`
// opens it then): the library took a third of a second to load, which every `trainsim run`
// paid. These tests link everything the command does and never measure.
TEST(Startup, CuBlasLtIsNotLoaded) {
  std::ifstream maps("/proc/self/maps");
  ASSERT_TRUE(maps.good());
  std::stringstream text;
  text << maps.rdbuf();
  EXPECT_EQ(text.str().find("libcublasLt"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::cli
