// trainsim: predicts what a training run on a GPU cluster would do.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "cli/diff_command.hpp"
#include "cli/calibrate_command.hpp"
#include "cli/guard.hpp"
#include "cli/import_command.hpp"
#include "cli/memory_budget.hpp"
#include "cli/report.hpp"
#include "cli/run_command.hpp"
#include "cli/search_command.hpp"
#include "cli/sweep_command.hpp"
#include "cli/validate_command.hpp"
#include "sim/heap_policy.hpp"
#include "strategies/registry.hpp"

namespace {

using namespace trainsim;

// --max-memory's text → bytes, checked by CLI11 with the option's own message.
CLI::Validator bytes_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return cli::parse_bytes(text) ? "" : "expected a size such as 4G, 512M or 2000000000, got \"" + text + "\"";
      },
      "SIZE");
}

int run_main(int argc, char** argv) {
  CLI::App app{"trainsim: a discrete-event simulator of large-scale neural-network training clusters"};
  app.require_subcommand(1);

  cli::RunOptions run;
  std::string fidelity = "full";
  std::string run_memory;
  auto* run_cmd = app.add_subcommand("run", "simulate one training iteration of a scenario and print the report");
  run_cmd->add_option("scenario", run.scenario_path, "scenario file (.textproto or .json)")->required();
  run_cmd->add_option("--json", run.json_path, "also write the report as JSON to this file");
  run_cmd->add_option("--trace", run.trace_path,
                      "write a Chrome trace-event JSON (open it in Perfetto or chrome://tracing)");
  run_cmd->add_option("--fidelity", fidelity, "full: every rank and flow; fast: one rank per stage, closed-form collectives")
      ->check(CLI::IsMember({"full", "fast"}));
  run_cmd->add_option("--max-memory", run_memory, cli::memory_budget_help())->check(bytes_validator());

  auto* passes_cmd = app.add_subcommand("passes", "list the registered strategy passes, their parameters and what they require and provide");

  cli::ValidateOptions validate;
  std::string validate_fidelity = "fast";
  std::string validate_memory;
  auto* validate_cmd = app.add_subcommand(
      "validate", "simulate every run of a runs table (CSV) and compare predicted with measured iteration time");
  validate_cmd->add_option("table", validate.table_path, "runs table (.csv; format: ../shared/validation/README.md)")
      ->required();
  validate_cmd->add_option("--json", validate.json_path, "also write the comparison as JSON to this file");
  validate_cmd
      ->add_option("--fidelity", validate_fidelity,
                   "fast (default): one rank per stage, closed-form collectives; full: every rank and flow")
      ->check(CLI::IsMember({"full", "fast"}));
  validate_cmd->add_option("--max-memory", validate_memory, cli::memory_budget_help() + " (per row)")
      ->check(bytes_validator());
  validate_cmd->add_flag("--unstated", validate.unstated,
                         "also predict each row with the other values its empty micro_batch, vpp, recompute and "
                         "sequence_parallel cells could hold (listed under the row; the MAPE keeps the documented "
                         "defaults)");
  validate_cmd->footer(scenarios::row_defaults_help());

  cli::SweepOptions sweep;
  std::string sweep_memory;
  auto* sweep_cmd = app.add_subcommand(
      "sweep", "simulate every variant of a scenario's sweep block (fast fidelity, all cores); one row per variant");
  sweep_cmd->add_option("scenario", sweep.sweep_path, "scenario file with a sweep block (.textproto or .json)")
      ->required();
  sweep_cmd->add_option("--csv", sweep.csv_path, "write the table as CSV (resumed when it holds rows of this sweep)");
  sweep_cmd->add_option("--jsonl", sweep.jsonl_path, "write the table as JSON Lines (resumed likewise)");
  sweep_cmd->add_option("--threads", sweep.threads, "threads (default: every core)")->check(CLI::Range(1u, 4096u));
  sweep_cmd->add_flag("--breakdown,!--no-breakdown", sweep.breakdown,
                      "--no-breakdown: summary-only simulation, no time breakdown columns (faster)");
  sweep_cmd->add_flag("--progress,!--no-progress", sweep.progress, "--no-progress: no progress bar even on a terminal");
  sweep_cmd->add_option("--max-memory", sweep_memory, cli::memory_budget_help() + " (per thread)")
      ->check(bytes_validator());
  sweep_cmd->add_option("--stop-after", sweep.stop_after,
                        "testing: after this many rows, leave the next half written and exit as if killed")
      ->group("");

  cli::SearchOptions search;
  auto* search_cmd = app.add_subcommand(
      "search", "the best layouts (top-k by throughput that fit) for a scenario's model, GPU count and global batch");
  search_cmd->add_option("scenario", search.scenario_path, "scenario file: its model, training and cluster (the "
                                                           "parallel and strategy blocks are what is searched)")
      ->required();
  search_cmd->add_option("--top", search.top, "how many layouts to list (default 10)")->check(CLI::Range(1, 1000));
  search_cmd->add_option("--threads", search.threads, "threads (default: every core)")->check(CLI::Range(1u, 4096u));
  search_cmd->add_option("--max-micro-batch", search.max_micro_batch, "largest micro-batch size tried (default 16)")
      ->check(CLI::Range(1, 1024));
  search_cmd->add_flag("--prune,!--no-prune", search.prune,
                       "--no-prune: simulate every candidate the memory bound keeps (slow; checks the pruning)");
  search_cmd->add_flag("--progress,!--no-progress", search.progress, "--no-progress: no progress bar");
  search_cmd->add_flag("--count-only", search.count_only, "enumerate the space and apply the memory bound only");
  search_cmd->add_option("--csv", search.csv_path,
                         "write every candidate (layout, bounds, pruned or simulated, figures, rank) as CSV");
  search_cmd->add_option("--jsonl", search.jsonl_path, "write the same table as JSON Lines");

  cli::DiffOptions diff;
  std::string diff_fidelity = "fast";
  auto* diff_cmd = app.add_subcommand(
      "diff", "how two scenarios' predictions differ term by term, and the ops on each critical path");
  diff_cmd->add_option("a", diff.a_path, "first scenario file")->required();
  diff_cmd->add_option("b", diff.b_path, "second scenario file")->required();
  diff_cmd->add_option("--fidelity", diff_fidelity, "fast (default) or full")->check(CLI::IsMember({"full", "fast"}));
  diff_cmd->add_option("--path-ops", diff.path_ops, "ops listed per critical path (default 8)")
      ->check(CLI::Range(1, 1000));

  cli::ImportOptions import;
  auto* import_cmd = app.add_subcommand(
      "import", "a Megatron-LM / NeMo command line (after --) or a DeepSpeed config JSON as a scenario file");
  import_cmd->add_option("--model", import.model, "model preset (e.g. gpt3-175b); Megatron arguments may give the shape");
  import_cmd->add_option("--node", import.node, "node preset: dgx-a100-80gb, dgx-h100, hgx-h200");
  import_cmd->add_option("--nodes", import.nodes, "number of nodes")->check(CLI::PositiveNumber);
  import_cmd->add_option("--seq", import.sequence, "sequence length (DeepSpeed configs have none)")
      ->check(CLI::PositiveNumber);
  import_cmd->add_option("--deepspeed", import.deepspeed_path, "a DeepSpeed config JSON");
  import_cmd->add_option("-o,--output", import.output_path, "write the scenario here (default: stdout)");
  import_cmd->add_option("args", import.megatron_args, "Megatron-LM arguments or NeMo key=value overrides, after --");

  cli::CalibrateOptions calibrate;
  auto* calibrate_cmd = app.add_subcommand(
      "calibrate", "fit a GPU cost profile to measurements: nccl-tests logs (text or -J JSON) and GEMM throughput");
  calibrate_cmd->add_option("--base", calibrate.base, "shipped profile the fit starts from (h100-sxm, a100-80gb, …)")
      ->required();
  calibrate_cmd->add_option("--out", calibrate.out_path, "the fitted profile (.textproto)");
  calibrate_cmd->add_option("--name", calibrate.name, "name of the fitted profile (default: <base>-calibrated)");
  calibrate_cmd->add_option("--nccl-tests", calibrate.nccl_tests, "nccl-tests output (repeatable), text or -J JSON");
  calibrate_cmd->add_option("--collective", calibrate.collective,
                            "collective of logs that do not name it (all_reduce, all_gather, reduce_scatter, …)");
  calibrate_cmd->add_option("--gemm-csv", calibrate.gemm_csv, "BF16 GEMM throughput, columns b,m,n,k,flops_per_s");
  calibrate_cmd->add_option("--gemm-fp16-csv", calibrate.gemm_fp16_csv,
                            "FP16 GEMM throughput (same columns); FP16 GEMMs then read its curve");
  calibrate_cmd->add_option("--gemm-fp8-csv", calibrate.gemm_fp8_csv,
                            "FP8 GEMM throughput (same columns); FP8 GEMMs then read its curve");
  calibrate_cmd->add_option("--gemm-tf32-csv", calibrate.gemm_tf32_csv,
                            "TF32 GEMM throughput (same columns); TF32 GEMMs then read its curve");
  calibrate_cmd->add_option("--sms", calibrate.sms, "SM count of the GPU the GEMMs ran on (H100 132, A100 108)")
      ->check(CLI::Range(1, 1024));
  calibrate_cmd->add_option("--attention-csv", calibrate.attention_csv,
                            "fused attention fwd+bwd throughput, columns batch,heads,sequence,head_dim,causal,flops_per_s");
  calibrate_cmd->add_option("--copies-csv", calibrate.copies_csv,
                            "copy times, columns kind,bytes,seconds (kinds h2d-pinned, d2h-pinned, d2d, peer-0-1, …)");
  calibrate_cmd->add_option("--memory-csv", calibrate.memory_csv,
                            "memory-bound kernel times, columns kind,bytes,seconds (kinds elementwise, copy, layernorm, "
                            "…; launch with bytes 0); sets memory_efficiency");
  calibrate_cmd->add_option("--accumulate-csv", calibrate.accumulate_csv,
                            "weight-gradient GEMMs adding into fp32 against writing BF16, as "
                            "scripts/gpu-checks/wgrad_accumulate.cu prints them; sets gemm_accumulate_bytes_per_s");
  calibrate_cmd->add_option("--report", calibrate.report_path, "write the fit report here instead of stdout");
  calibrate_cmd->add_flag("--measure", calibrate.measure,
                          "measure this machine's GPUs first (GEMMs, attention, memory-bound kernels, copies, NCCL), "
                          "then fit the measurements");
  calibrate_cmd->add_flag("--quick", calibrate.quick, "with --measure: fewer shapes and sizes, at most 10 minutes");
  calibrate_cmd->add_option("--measure-dir", calibrate.measure_dir,
                            "with --measure: folder for the raw measurements (default: <out>.measurements)");
  calibrate_cmd->add_option("--phases", calibrate.phases,
                            "with --measure: only these phases, comma-separated (gemm-bf16, gemm-fp16, gemm-fp8, "
                            "gemm-tf32, gemm-accumulate, attention-fused, attention-unfused, memory, copies, collectives; "
                            "default: all)");

  CLI11_PARSE(app, argc, argv);

  if (*calibrate_cmd) return cli::calibrate_command(calibrate, std::cout, std::cerr);

  if (*import_cmd) return cli::import_command(import, std::cout, std::cerr);

  if (*diff_cmd) {
    diff.fidelity = diff_fidelity == "full" ? strategies::Fidelity::FULL : strategies::Fidelity::FAST;
    return cli::diff_command(diff, std::cout, std::cerr);
  }

  if (*search_cmd) return cli::search_command(search, std::cout, std::cerr);

  if (*sweep_cmd) {
    if (!sweep_memory.empty()) sweep.max_memory_bytes = *cli::parse_bytes(sweep_memory);
    return cli::sweep_command(sweep, std::cout, std::cerr);
  }

  if (*run_cmd) {
    run.fidelity = fidelity == "fast" ? strategies::Fidelity::FAST : strategies::Fidelity::FULL;
    if (!run_memory.empty()) run.max_memory_bytes = *cli::parse_bytes(run_memory);
    return cli::run_command(run, std::cout, std::cerr);
  }
  if (*validate_cmd) {
    validate.fidelity = validate_fidelity == "full" ? strategies::Fidelity::FULL : strategies::Fidelity::FAST;
    if (!validate_memory.empty()) validate.max_memory_bytes = *cli::parse_bytes(validate_memory);
    return cli::validate_command(validate, std::cout, std::cerr);
  }
  if (*passes_cmd) {
    std::cout << cli::passes_text();
    return 0;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  trainsim::sim::keep_freed_heap_memory();
  // Nothing a command throws may end the process by a signal: one error line, status 1.
  return trainsim::cli::guarded([&] { return run_main(argc, argv); }, std::cerr);
}
