#include "cli/calibrate_command.hpp"

#include "calibration/profile_fit.hpp"
#include "cli/detail/output_file.hpp"
#include "hardware/gpu_profile.hpp"
#include "scenarios/input_file.hpp"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <filesystem>
#include <ostream>

#ifdef TRAINSIM_HAVE_MEASURE
#include "calibration/cuda/measure.hpp"
#endif

namespace trainsim::cli {
namespace {

// nccl-tests logs and GEMM tables are small; the cap only stops a device or a huge file.
constexpr std::size_t kMaxMeasurementBytes = std::size_t{64} << 20;

}  // namespace

int calibrate_command(const CalibrateOptions& options, std::ostream& out, std::ostream& err) {
  CalibrateOptions o = options;
  if (!o.measure && o.nccl_tests.empty() && o.gemm_csv.empty() && o.attention_csv.empty() && o.copies_csv.empty() &&
      o.memory_csv.empty()) {
    err << "error: calibrate: nothing to fit: measure this machine's GPUs with --measure [--quick], or fit recorded "
           "measurements with --nccl-tests LOG, --gemm-csv FILE, --attention-csv FILE, --copies-csv FILE and/or "
           "--memory-csv FILE\n";
    return 1;
  }
  if (o.quick && !o.measure) {
    err << "error: calibrate: --quick bounds a measuring run; it needs --measure\n";
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
  if (o.measure) {
#ifdef TRAINSIM_HAVE_MEASURE
    const std::string dir = o.measure_dir.empty() ? o.out_path + ".measurements" : o.measure_dir;
    calibration::cuda::MeasureOptions mo;
    mo.quick = o.quick;
    mo.out_dir = dir;
    calibration::cuda::MeasureResult m = calibration::cuda::measure(mo, out, err);
    if (m.status != 0) return 1;
    // Fit what was measured: the BF16 GEMMs (the cost model's GEMM curve), the copies
    // (pcie_bytes_per_s), the memory-bound kernels (memory_efficiency) and every collective
    // log; the other files stay as raw data.
    namespace fs = std::filesystem;
    if (fs::exists(fs::path(dir) / "gemm-bf16.csv")) {
      o.gemm_csv = (fs::path(dir) / "gemm-bf16.csv").string();
      o.sms = m.run.devices.front().sms;
    }
    if (fs::exists(fs::path(dir) / "copies.csv")) o.copies_csv = (fs::path(dir) / "copies.csv").string();
    if (fs::exists(fs::path(dir) / "memory.csv")) o.memory_csv = (fs::path(dir) / "memory.csv").string();
    std::vector<std::string> logs;
    if (fs::is_directory(fs::path(dir) / "nccl"))
      for (const auto& entry : fs::directory_iterator(fs::path(dir) / "nccl"))
        if (entry.path().extension() == ".txt") logs.push_back(entry.path().string());
    std::sort(logs.begin(), logs.end());  // directory order is not deterministic
    o.nccl_tests.insert(o.nccl_tests.end(), logs.begin(), logs.end());
    if (o.nccl_tests.empty() && o.gemm_csv.empty() && o.copies_csv.empty() && o.memory_csv.empty()) {
      err << "error: calibrate --measure: the run measured nothing that can be fitted (see " << dir << "/run.csv)\n";
      return 1;
    }
#else
    err << "error: calibrate --measure: this build of trainsim has no CUDA measuring harness (CMake found no CUDA "
           "toolkit with cuBLASLt and NCCL); fit recorded measurements instead with --nccl-tests LOG and/or "
           "--gemm-csv FILE\n";
    return 1;
#endif
  }
  std::vector<std::string> inputs = o.nccl_tests;
  if (!o.gemm_csv.empty()) inputs.push_back(o.gemm_csv);
  if (!o.attention_csv.empty()) inputs.push_back(o.attention_csv);
  if (!o.copies_csv.empty()) inputs.push_back(o.copies_csv);
  if (!o.memory_csv.empty()) inputs.push_back(o.memory_csv);
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
  if (!o.attention_csv.empty()) {
    scenarios::InputFile file = scenarios::read_input_file(o.attention_csv, kMaxMeasurementBytes);
    if (!file.ok()) {
      err << o.attention_csv << ": error: cannot read file: " << file.error << '\n';
      return 1;
    }
    if (std::string e = calibration::read_attention_csv(file.text, o.attention_csv, in.attention); !e.empty()) {
      err << e << '\n';
      return 1;
    }
    in.attention_origin = o.attention_csv;
  }
  if (!o.copies_csv.empty()) {
    scenarios::InputFile file = scenarios::read_input_file(o.copies_csv, kMaxMeasurementBytes);
    if (!file.ok()) {
      err << o.copies_csv << ": error: cannot read file: " << file.error << '\n';
      return 1;
    }
    if (std::string e = calibration::read_sized_csv(file.text, o.copies_csv, in.copies); !e.empty()) {
      err << e << '\n';
      return 1;
    }
    in.copies_origin = o.copies_csv;
    in.skip_short_copy_kinds = o.measure;  // a run cut by its time budget: fit the kinds it completed
  }
  if (!o.memory_csv.empty()) {
    scenarios::InputFile file = scenarios::read_input_file(o.memory_csv, kMaxMeasurementBytes);
    if (!file.ok()) {
      err << o.memory_csv << ": error: cannot read file: " << file.error << '\n';
      return 1;
    }
    if (std::string e = calibration::read_sized_csv(file.text, o.memory_csv, in.memory, calibration::kLaunchKernel);
        !e.empty()) {
      err << e << '\n';
      return 1;
    }
    in.memory_origin = o.memory_csv;
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
