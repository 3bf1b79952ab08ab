#include "calibration/measure_output.hpp"

#include <fmt/format.h>

namespace trainsim::calibration {
namespace {

std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

// nccl-tests prints times with 1 decimal below 10 ms and none above (src/common.cu).
std::string time_text(double us) { return us < 10000 ? fmt::format("{:8.1f}", us) : fmt::format("{:8.0f}", us); }

}  // namespace

std::string write_run_csv(const RunRecord& run) {
  std::string s = "field,value\n";
  s += fmt::format("host,{}\n", run.host);
  s += fmt::format("driver,{}\n", run.driver);
  s += fmt::format("cuda_driver_api,{}\n", version_text(run.cuda_driver_api));
  s += fmt::format("cuda_runtime,{}\n", version_text(run.cuda_runtime));
  s += fmt::format("cublaslt,{}\n", run.cublaslt);
  s += fmt::format("nccl,{}\n", run.nccl);
  s += fmt::format("quick,{}\n", run.quick ? 1 : 0);
  s += fmt::format("gpus,{}\n", run.devices.size());
  for (const auto& d : run.devices) {
    const std::string p = fmt::format("gpu{}.", d.index);
    s += fmt::format("{}name,{}\n", p, d.name);
    s += fmt::format("{}pci_bus,{}\n", p, d.pci_bus);
    s += fmt::format("{}sms,{}\n", p, d.sms);
    s += fmt::format("{}compute_capability,{}\n", p, d.compute_capability);
    s += fmt::format("{}memory_bytes,{}\n", p, d.memory_bytes);
    s += fmt::format("{}sm_clock_max_mhz,{}\n", p, d.sm_clock_max_mhz);
    s += fmt::format("{}memory_clock_max_mhz,{}\n", p, d.memory_clock_max_mhz);
    s += fmt::format("{}sm_clock_mhz,{}\n", p, d.sm_clock_mhz);
    s += fmt::format("{}memory_clock_mhz,{}\n", p, d.memory_clock_mhz);
  }
  for (std::size_t i = 0; i < run.notes.size(); ++i) {
    std::string note = run.notes[i];
    for (char& c : note)
      if (c == '\n' || c == ',') c = ';';
    s += fmt::format("note{},{}\n", i, note);
  }
  return s;
}

std::string write_gemm_csv(const std::string& dtype, const RunRecord& run, const std::vector<GemmMeasurement>& rows) {
  std::string s = fmt::format("# {} GEMMs through cuBLASLt (TN layout, FP32 accumulation), measured by trainsim "
                              "calibrate --measure on {} (cuBLASLt {}, CUDA runtime {})\n",
                              dtype, run.devices.empty() ? std::string("?") : run.devices.front().name, run.cublaslt,
                              version_text(run.cuda_runtime));
  s += "b,m,n,k,flops_per_s\n";
  for (const auto& r : rows)
    s += fmt::format("{},{},{},{},{:.6e}\n", r.shape.b, r.shape.m, r.shape.n, r.shape.k, r.shape.flops() / r.seconds);
  return s;
}

std::string write_attention_csv(const std::vector<AttentionRecord>& rows) {
  std::string s = "path,pass,causal,batch,heads,sequence,head_dim,seconds\n";
  for (const auto& r : rows) {
    s += fmt::format("{},{},{},{},{},{},{},{:.6e}\n", r.path, r.pass, r.problem.causal ? 1 : 0, r.problem.batch,
                     r.problem.heads, r.problem.sequence, r.problem.head_dim, r.seconds);
  }
  return s;
}

std::string write_sized_csv(const std::vector<SizedRecord>& rows) {
  std::string s = "kind,bytes,seconds\n";
  for (const auto& r : rows) s += fmt::format("{},{},{:.6e}\n", r.kind, r.bytes, r.seconds);
  return s;
}

double bus_bandwidth_factor(const std::string& collective, int ranks) {
  const double n = ranks;
  if (collective == "all_reduce") return 2 * (n - 1) / n;
  if (collective == "all_gather" || collective == "reduce_scatter" || collective == "alltoall") return (n - 1) / n;
  return 1;  // broadcast, reduce, sendrecv
}

std::string collective_file_name(const CollectiveRecord& run) {
  return fmt::format("nccl/{}-{}gpu-{}-{}.txt", run.collective, run.devices.size(), run.algorithm, run.protocol);
}

std::string write_nccl_tests_log(const CollectiveRecord& run) {
  const int n = static_cast<int>(run.devices.size());
  std::string s = fmt::format("# Collective test starting: {}_perf\n", run.collective);
  s += fmt::format("# nThread 1 nGpus {} minBytes {} maxBytes {} step: 2(factor) warmup iters: {} iters: {} agg iters: 1 "
                   "validation: 0 graph: 0\n",
                   n, run.rows.empty() ? 0 : run.rows.front().bytes, run.rows.empty() ? 0 : run.rows.back().bytes,
                   run.warmup_iters, run.iters);
  s += fmt::format("# measured by trainsim calibrate --measure, one process, ncclCommInitAll; NCCL_ALGO={} NCCL_PROTO={}\n",
                   run.algorithm, run.protocol);
  if (run.collective == "alltoall" || run.collective == "sendrecv")
    s += "# no in-place form: the in-place columns time the out-of-place operation again\n";
  s += "#\n# Using devices\n";
  for (const auto& d : run.devices) {
    s += fmt::format("#  Rank {:2} Group  0 Pid      0 on {} device {:2} [{}] {}\n", d.index, run.host, d.index, d.pci_bus,
                     d.name);
  }
  s += "#\n";
  s += "#                                                              out-of-place                       in-place          \n";
  s += "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  s += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n";
  const double factor = bus_bandwidth_factor(run.collective, n);
  for (const auto& r : run.rows) {
    s += fmt::format("{:>12} {:>13} {:>9} {:>7} {:>7}", r.bytes, r.count, run.type, run.redop, run.root);
    for (double us : {r.out_of_place_us, r.in_place_us}) {
      // algbw from the printed time, so that the reader's size/time check holds exactly.
      const double printed_us = std::stod(time_text(us));
      const double algbw = printed_us > 0 ? static_cast<double>(r.bytes) / (printed_us * 1e3) : 0;
      s += fmt::format(" {} {:7.2f} {:7.2f} {:>6}", time_text(us), algbw, algbw * factor, "N/A");
    }
    s += "\n";
  }
  s += "# Out of bounds values : 0 OK\n";
  s += "# Avg bus bandwidth    : N/A (trainsim calibrate --measure)\n#\n";
  return s;
}

}  // namespace trainsim::calibration
