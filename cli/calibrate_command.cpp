#include "cli/calibrate_command.hpp"

#include "calibration/profile_fit.hpp"
#include "cli/detail/output_file.hpp"
#include "hardware/gpu_profile.hpp"
#include "scenarios/input_file.hpp"

#include <google/protobuf/text_format.h>

#include <ostream>

namespace trainsim::cli {
namespace {

// nccl-tests logs and GEMM tables are small; the cap only stops a device or a huge file.
constexpr std::size_t kMaxMeasurementBytes = std::size_t{64} << 20;

}  // namespace

int calibrate_command(const CalibrateOptions& o, std::ostream& out, std::ostream& err) {
  if (o.nccl_tests.empty() && o.gemm_csv.empty()) {
    err << "error: calibrate: measuring on this machine's GPUs needs the CUDA benchmarks, which this build of "
           "trainsim does not contain; fit recorded measurements instead with --nccl-tests LOG and/or --gemm-csv "
           "FILE\n";
    return 1;
  }
  if (o.out_path.empty()) {
    err << "error: calibrate: --out PROFILE.textproto is required\n";
    return 1;
  }
  auto base = hardware::find_profile(o.base);
  if (!base) {
    std::string names;
    for (const auto& n : hardware::profile_names()) names += (names.empty() ? "" : ", ") + n;
    err << "error: calibrate: --base: unknown profile \"" << o.base << "\" (valid: " << names << ")\n";
    return 1;
  }
  std::vector<std::string> inputs = o.nccl_tests;
  if (!o.gemm_csv.empty()) inputs.push_back(o.gemm_csv);
  if (auto refused = detail::refuse_overwriting_inputs({{"--out", o.out_path}, {"--report", o.report_path}}, inputs)) {
    err << *refused << '\n';
    return 1;
  }
  calibration::CalibrationInput in;
  in.base = *base;
  in.name = o.name;
  in.sms = o.sms;
  for (const auto& path : o.nccl_tests) {
    scenarios::InputFile file = scenarios::read_input_file(path, kMaxMeasurementBytes);
    if (!file.ok()) {
      err << path << ": error: cannot read file: " << file.error << '\n';
      return 1;
    }
    calibration::NcclTestsResult r = calibration::read_nccl_tests(file.text, path, o.collective);
    if (const auto* e = std::get_if<calibration::LogError>(&r)) {
      err << calibration::to_string(*e) << '\n';
      return 1;
    }
    auto& log = std::get<calibration::NcclTestsLog>(r);
    for (const auto& w : log.warnings) err << w << '\n';
    if (log.skipped_rows > 0) err << path << ": warning: " << log.skipped_rows << " rows skipped\n";
    in.logs.push_back(std::move(log));
  }
  if (!o.gemm_csv.empty()) {
    scenarios::InputFile file = scenarios::read_input_file(o.gemm_csv, kMaxMeasurementBytes);
    if (!file.ok()) {
      err << o.gemm_csv << ": error: cannot read file: " << file.error << '\n';
      return 1;
    }
    if (std::string e = calibration::read_gemm_csv(file.text, o.gemm_csv, in.gemm_bf16); !e.empty()) {
      err << e << '\n';
      return 1;
    }
    in.gemm_origin = o.gemm_csv;
  }
  calibration::CalibrationOutput result = calibration::calibrate(in);
  if (!result.error.empty()) {
    err << result.error << '\n';
    return 1;
  }
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseUtf8StringEscaping(true);  // keep the citations readable (§, µ)
  printer.PrintToString(result.profile, &text);
  detail::OutputFile profile_file(o.out_path);
  profile_file.stream() << "# Written by `trainsim calibrate`; the fit report states the error on held-back points.\n"
                        << text;
  if (!profile_file.commit()) {
    err << profile_file.error() << '\n';
    return 1;
  }
  if (o.report_path.empty()) {
    out << result.report;
  } else {
    detail::OutputFile report(o.report_path);
    report.stream() << result.report;
    if (!report.commit()) {
      err << report.error() << '\n';
      return 1;
    }
  }
  return 0;
}

}  // namespace trainsim::cli
