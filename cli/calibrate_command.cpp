#include "cli/calibrate_command.hpp"

#include "calibration/attention_records.hpp"
#include "calibration/measure_plan.hpp"
#include "calibration/profile_fit.hpp"
#include "cli/detail/output_file.hpp"
#include "hardware/gpu_profile.hpp"
#include "scenarios/input_file.hpp"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <utility>
#include <ostream>
#include <stdexcept>

#ifdef TRAINSIM_HAVE_MEASURE
#include "calibration/cuda/measure.hpp"
#endif

namespace trainsim::cli {
namespace {

// nccl-tests logs and GEMM tables are small; the cap only stops a device or a huge file.
constexpr std::size_t kMaxMeasurementBytes = std::size_t{64} << 20;

// The first line that is neither blank nor a '#' comment: a table's header.
std::string first_data_line(const std::string& text) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line[0] != '#') return line;
    start = end + 1;
  }
  return "";
}

}  // namespace

int calibrate_command(const CalibrateOptions& options, std::ostream& out, std::ostream& err) {
  CalibrateOptions o = options;
  if (!o.measure && o.nccl_tests.empty() && o.gemm_csv.empty() && o.gemm_fp16_csv.empty() && o.gemm_fp8_csv.empty() &&
      o.gemm_tf32_csv.empty() && o.attention_csv.empty() && o.copies_csv.empty() && o.memory_csv.empty() &&
      o.accumulate_csv.empty()) {
    err << "error: calibrate: nothing to fit: measure this machine's GPUs with --measure [--quick], or fit recorded "
           "measurements with --nccl-tests LOG, --gemm-csv FILE (BF16; --gemm-fp16-csv, --gemm-fp8-csv, "
           "--gemm-tf32-csv), --attention-csv FILE, --copies-csv FILE, --memory-csv FILE and/or --accumulate-csv "
           "FILE\n";
    return 1;
  }
  if (!o.phases.empty() && !o.measure) {
    err << "error: calibrate: --phases chooses what a measuring run measures; it needs --measure\n";
    return 1;
  }
  calibration::MeasurePhases phases;
  if (!o.phases.empty()) {
    try {
      phases = calibration::MeasurePhases::parse(o.phases);
    } catch (const std::invalid_argument& e) {
      err << "error: calibrate: --phases: " << e.what() << '\n';
      return 1;
    }
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
    mo.phases = phases;
    calibration::cuda::MeasureResult m = calibration::cuda::measure(mo, out, err);
    if (m.status != 0) return 1;
    // Fit what was measured: the GEMMs of every dtype (the cost model's GEMM curve for
    // that dtype), the accumulating GEMMs (gemm_accumulate_bytes_per_s), the copies
    // (pcie_bytes_per_s), the memory-bound kernels (memory_efficiency) and every collective
    // log; the other files stay as raw data.
    namespace fs = std::filesystem;
    for (auto [name, path] : {std::pair{"gemm-bf16.csv", &o.gemm_csv}, std::pair{"gemm-fp16.csv", &o.gemm_fp16_csv},
                              std::pair{"gemm-fp8.csv", &o.gemm_fp8_csv}, std::pair{"gemm-tf32.csv", &o.gemm_tf32_csv}}) {
      if (!fs::exists(fs::path(dir) / name)) continue;
      *path = (fs::path(dir) / name).string();
      o.sms = m.run.devices.front().sms;
    }
    if (fs::exists(fs::path(dir) / "attention.csv")) o.attention_csv = (fs::path(dir) / "attention.csv").string();
    if (fs::exists(fs::path(dir) / "copies.csv")) o.copies_csv = (fs::path(dir) / "copies.csv").string();
    if (fs::exists(fs::path(dir) / "memory.csv")) o.memory_csv = (fs::path(dir) / "memory.csv").string();
    if (fs::exists(fs::path(dir) / "wgrad-accumulate.csv"))
      o.accumulate_csv = (fs::path(dir) / "wgrad-accumulate.csv").string();
    std::vector<std::string> logs;
    if (fs::is_directory(fs::path(dir) / "nccl"))
      for (const auto& entry : fs::directory_iterator(fs::path(dir) / "nccl"))
        if (entry.path().extension() == ".txt") logs.push_back(entry.path().string());
    std::sort(logs.begin(), logs.end());  // directory order is not deterministic
    o.nccl_tests.insert(o.nccl_tests.end(), logs.begin(), logs.end());
    if (o.nccl_tests.empty() && o.gemm_csv.empty() && o.gemm_fp16_csv.empty() && o.gemm_fp8_csv.empty() &&
        o.gemm_tf32_csv.empty() && o.copies_csv.empty() && o.memory_csv.empty() && o.attention_csv.empty() &&
        o.accumulate_csv.empty()) {
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
  const std::pair<const char*, const std::string*> other_gemms[] = {
      {"fp16", &o.gemm_fp16_csv}, {"fp8", &o.gemm_fp8_csv}, {"tf32", &o.gemm_tf32_csv}};
  for (const auto& [dtype, path] : other_gemms)
    if (!path->empty()) inputs.push_back(*path);
  if (!o.attention_csv.empty()) inputs.push_back(o.attention_csv);
  if (!o.copies_csv.empty()) inputs.push_back(o.copies_csv);
  if (!o.memory_csv.empty()) inputs.push_back(o.memory_csv);
  if (!o.accumulate_csv.empty()) inputs.push_back(o.accumulate_csv);
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
  for (const auto& [dtype, path] : other_gemms) {
    if (path->empty()) continue;
    scenarios::InputFile file = scenarios::read_input_file(*path, kMaxMeasurementBytes);
    if (!file.ok()) {
      err << *path << ": error: cannot read file: " << file.error << '\n';
      return 1;
    }
    calibration::CalibrationInput::GemmTable table{dtype, {}, *path};
    if (std::string e = calibration::read_gemm_csv(file.text, *path, table.rows); !e.empty()) {
      err << e << '\n';
      return 1;
    }
    in.gemm_other.push_back(std::move(table));
  }
  if (!o.attention_csv.empty()) {
    scenarios::InputFile file = scenarios::read_input_file(o.attention_csv, kMaxMeasurementBytes);
    if (!file.ok()) {
      err << o.attention_csv << ": error: cannot read file: " << file.error << '\n';
      return 1;
    }
    if (first_data_line(file.text) == calibration::kAttentionRecordsHeader) {
      // The harness's attention.csv: its fused rows, forward + backward per problem.
      std::vector<calibration::AttentionRecord> records;
      if (std::string e = calibration::read_attention_records(file.text, o.attention_csv, records); !e.empty()) {
        err << e << '\n';
        return 1;
      }
      calibration::FusedAttention fused = calibration::fused_attention_measurements(records);
      if (fused.unfused_rows > 0)
        err << o.attention_csv << ": note: " << fused.unfused_rows
            << " rows of the unfused path not fitted (the cost model prices it from the GEMM and memory-bound fits)\n";
      if (fused.unpaired_rows > 0)
        err << o.attention_csv << ": warning: " << fused.unpaired_rows
            << " fused rows skipped: the problem's other pass was not measured\n";
      std::vector<std::int64_t> sequences;
      for (const auto& m : fused.measurements)
        if (std::find(sequences.begin(), sequences.end(), m.sequence) == sequences.end()) sequences.push_back(m.sequence);
      if (!o.measure && fused.measurements.empty()) {
        err << o.attention_csv << ": error: no fused attention problem (path " << calibration::kFusedAttentionPath
            << ", forward and backward) to fit\n";
        return 1;
      }
      if (o.measure && (fused.measurements.size() < 8 || sequences.size() < 4)) {
        // A run without cuDNN, or cut by its budget: the fit needs 8 problems over 4 lengths.
        err << o.attention_csv << ": note: " << fused.measurements.size() << " fused attention problems over "
            << sequences.size()
            << " sequence lengths measured; the attention fit needs 8 over 4: batched_gemm_efficiency left as the "
               "base profile's\n";
      } else {
        in.attention = std::move(fused.measurements);
        in.attention_origin = o.attention_csv;
      }
    } else {
      if (std::string e = calibration::read_attention_csv(file.text, o.attention_csv, in.attention); !e.empty()) {
        err << e << '\n';
        return 1;
      }
      in.attention_origin = o.attention_csv;
    }
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
  if (!o.accumulate_csv.empty()) {
    scenarios::InputFile file = scenarios::read_input_file(o.accumulate_csv, kMaxMeasurementBytes);
    if (!file.ok()) {
      err << o.accumulate_csv << ": error: cannot read file: " << file.error << '\n';
      return 1;
    }
    if (std::string e = calibration::read_accumulate_csv(file.text, o.accumulate_csv, in.accumulate); !e.empty()) {
      err << e << '\n';
      return 1;
    }
    in.accumulate_origin = o.accumulate_csv;
    if (o.measure && in.accumulate.size() < calibration::kMinAccumulateShapes) {
      // A run cut by its time budget: too few shapes to hold any back.
      err << o.accumulate_csv << ": note: " << in.accumulate.size() << " weight-gradient shapes measured; the fit needs "
          << calibration::kMinAccumulateShapes << ": gemm_accumulate_bytes_per_s left as the base profile's\n";
      in.accumulate.clear();
    }
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
