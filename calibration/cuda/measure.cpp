#include "calibration/cuda/measure.hpp"

#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/phases.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <ostream>

namespace trainsim::calibration::cuda {
namespace {

using detail::MeasureError;
using detail::now_s;

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw MeasureError("cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

int cuda_device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : -1;
}

MeasureResult measure(const MeasureOptions& o, std::ostream& out, std::ostream& err) {
  MeasureResult result;
  const double start = now_s();
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    err << "error: calibrate --measure: no CUDA GPU on this machine ("
        << (e != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e)
                             : std::string("cudaGetDeviceCount found 0 devices"))
        << "); fit recorded measurements instead with --nccl-tests LOG and/or --gemm-csv FILE\n";
    result.status = 1;
    return result;
  }
  const std::filesystem::path dir(o.out_dir);
  try {
    const MeasurePlan plan = make_measure_plan(o.quick);
    result.run = detail::describe_run(count, o.quick);
    RunRecord& run = result.run;
    const TimeBudget total(start, o.time_limit_s > 0 ? o.time_limit_s : plan.total_s);
    // Quick: shorter timed batches (20 ms; the median of three batches still averages
    // thousands of small kernels); full: 100 ms.
    const double target_s = o.quick ? 0.02 : 0.1;
    auto phase = [&](double seconds) { return detail::Phase{total.phase(now_s(), seconds), target_s, &run.notes, &out}; };
    const auto& gpu = run.devices.front();
    out << fmt::format("measuring on {} GPU(s), GPU 0: {} ({} SMs, compute capability {}.{}); budget {:.0f} s\n", count,
                       gpu.name, gpu.sms, gpu.compute_capability / 10, gpu.compute_capability % 10, plan.total_s);
    TRAINSIM_CHECK(cudaSetDevice(0));
    using detail::GemmDtype;
    for (GemmDtype dtype : {GemmDtype::BF16, GemmDtype::FP16, GemmDtype::FP8, GemmDtype::TF32}) {
      const char* name = detail::dtype_name(dtype);
      const MeasurePhase gemm_phase[] = {MeasurePhase::GemmBf16, MeasurePhase::GemmFp16, MeasurePhase::GemmFp8,
                                         MeasurePhase::GemmTf32};
      if (!o.phases.has(gemm_phase[static_cast<int>(dtype)])) continue;
      // FP8 tensor cores: Ada (8.9) and Hopper (9.0) on; the issue asks for sm_90+.
      if (dtype == GemmDtype::FP8 && gpu.compute_capability < 89) {
        run.notes.push_back(fmt::format("gemm fp8: skipped: compute capability {} has no FP8 tensor cores", gpu.compute_capability));
        continue;
      }
      out << fmt::format("gemm {}: {} shapes planned\n", name, plan.gemm_shapes.size());
      auto rows = detail::measure_gemms(phase(plan.gemm_s_per_dtype), dtype, plan.gemm_shapes);
      if (dtype == GemmDtype::BF16) detail::read_clocks(run);  // the clocks under a GEMM load
      if (!rows.empty()) write_file(dir / fmt::format("gemm-{}.csv", name), write_gemm_csv(name, run, rows));
      out << fmt::format("  {} shapes measured\n", rows.size());
    }
    if (o.phases.has(MeasurePhase::GemmAccumulate)) {
      out << fmt::format("gemm accumulate: {} weight-gradient shapes planned\n", plan.accumulate_shapes.size());
      auto rows = detail::measure_accumulating_gemms(phase(plan.accumulate_s), plan.accumulate_shapes);
      if (!rows.empty())
        write_file(dir / "wgrad-accumulate.csv",
                   write_accumulate_csv(rows, fmt::format("{}, weight gradients adding into fp32 and BF16 "
                                                          "(cuBLASLt beta 1) against writing BF16",
                                                          gpu.name)));
      out << fmt::format("  {} shapes measured\n", rows.size());
    }
    // The attention budget is shared: half for cuDNN's fused kernels (what training runs
    // use, and what the profile's attention curve is fitted from), half for the unfused path.
    std::vector<AttentionRecord> attention;
    const bool fused = o.phases.has(MeasurePhase::AttentionFused), unfused = o.phases.has(MeasurePhase::AttentionUnfused);
#ifdef TRAINSIM_HAVE_CUDNN
    if (fused) {
      out << fmt::format("attention (cuDNN fused SDPA): {} problems planned\n", plan.attention.size());
      try {
        attention = detail::measure_fused_attention(phase(plan.attention_s / 2), plan.attention);
      } catch (const detail::MeasureError& failure) {
        // A failure in this phase is noted and the run goes on; if the device itself is
        // broken, the next phase stops the run as before.
        run.notes.push_back(std::string("sdpa: stopped by an error: ") + failure.what());
      }
    }
    const double unfused_s = fused ? plan.attention_s / 2 : plan.attention_s;
#else
    if (fused) run.notes.push_back("sdpa: cuDNN fused attention not measured: this build of trainsim found no cuDNN");
    const double unfused_s = plan.attention_s;
#endif
    if (unfused) {
      out << fmt::format("attention (unfused): {} problems planned\n", plan.attention.size());
      auto rows = detail::measure_attention(phase(unfused_s), plan.attention);
      attention.insert(attention.end(), rows.begin(), rows.end());
    }
    if (fused || unfused) write_file(dir / "attention.csv", write_attention_csv(attention));
    if (o.phases.has(MeasurePhase::Memory)) {
      out << "memory-bound kernels and launch cost\n";
      auto memory = detail::measure_memory_kernels(phase(plan.memory_s), plan.memory_kernel_bytes);
      write_file(dir / "memory.csv", write_sized_csv(memory));
    }
    if (o.phases.has(MeasurePhase::Copies)) {
      out << "copies\n";
      auto copies = detail::measure_copies(phase(plan.copy_s), count, plan.copy_bytes);
      write_file(dir / "copies.csv", write_sized_csv(copies));
    }
    if (o.phases.has(MeasurePhase::Collectives)) {
      out << "collectives\n";
      detail::measure_collectives(phase(plan.collective_s), run, plan.collective_bytes, [&](const CollectiveRecord& c) {
        write_file(dir / collective_file_name(c), write_nccl_tests_log(c));
      });
    }
    result.seconds = now_s() - start;
    run.notes.push_back(fmt::format("measured in {:.0f} s", result.seconds));
    write_file(dir / "run.csv", write_run_csv(run));
    out << fmt::format("measured in {:.0f} s; raw measurements in {}\n", result.seconds, dir.string());
  } catch (const std::exception& ex) {  // MeasureError, and filesystem errors
    err << "error: calibrate --measure: " << ex.what() << '\n';
    if (!result.run.devices.empty()) {
      try {
        result.run.notes.push_back(std::string("stopped by an error: ") + ex.what());
        write_file(dir / "run.csv", write_run_csv(result.run));
      } catch (const std::exception&) {
      }
    }
    result.status = 1;
  }
  return result;
}

}  // namespace trainsim::calibration::cuda
