// trainsim: predicts what a training run on a GPU cluster would do.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/report.hpp"
#include "cli/run_command.hpp"
#include "cli/validate_command.hpp"
#include "strategies/registry.hpp"

int main(int argc, char** argv) {
  using namespace trainsim;
  CLI::App app{"trainsim: a discrete-event simulator of large-scale neural-network training clusters"};
  app.require_subcommand(1);

  cli::RunOptions run;
  std::string fidelity = "full";
  auto* run_cmd = app.add_subcommand("run", "simulate one training iteration of a scenario and print the report");
  run_cmd->add_option("scenario", run.scenario_path, "scenario file (.textproto or .json)")->required();
  run_cmd->add_option("--json", run.json_path, "also write the report as JSON to this file");
  run_cmd->add_option("--trace", run.trace_path,
                      "write a Chrome trace-event JSON (open it in Perfetto or chrome://tracing)");
  run_cmd->add_option("--fidelity", fidelity, "full: every rank and flow; fast: one rank per stage, closed-form collectives")
      ->check(CLI::IsMember({"full", "fast"}));

  auto* passes_cmd = app.add_subcommand("passes", "list the registered strategy passes, their parameters and what they require and provide");

  cli::ValidateOptions validate;
  std::string validate_fidelity = "fast";
  auto* validate_cmd = app.add_subcommand(
      "validate", "simulate every run of a runs table (CSV) and compare predicted with measured iteration time");
  validate_cmd->add_option("table", validate.table_path, "runs table (.csv; format: ../shared/validation/README.md)")
      ->required();
  validate_cmd->add_option("--json", validate.json_path, "also write the comparison as JSON to this file");
  validate_cmd
      ->add_option("--fidelity", validate_fidelity,
                   "fast (default): one rank per stage, closed-form collectives; full: every rank and flow")
      ->check(CLI::IsMember({"full", "fast"}));
  validate_cmd->footer(cli::defaults_help());

  CLI11_PARSE(app, argc, argv);

  if (*run_cmd) {
    run.fidelity = fidelity == "fast" ? strategies::Fidelity::FAST : strategies::Fidelity::FULL;
    return cli::run_command(run, std::cout, std::cerr);
  }
  if (*validate_cmd) {
    validate.fidelity = validate_fidelity == "full" ? strategies::Fidelity::FULL : strategies::Fidelity::FAST;
    return cli::validate_command(validate, std::cout, std::cerr);
  }
  if (*passes_cmd) {
    std::cout << cli::passes_text();
    return 0;
  }
  return 0;
}
