// Versions and clocks recorded with every run. NVML (the driver's management library) is
// loaded at run time: linking it would stop the program from starting on a machine without
// the NVIDIA driver, where everything but measuring must still work.
#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/phases.hpp"
#include "calibration/cuda/detail/lt_api.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <fmt/format.h>

namespace trainsim::calibration::cuda::detail {
namespace {

// The few NVML entry points used, by their documented C signatures (nvml.h is not part of
// this toolkit's headers). NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2; NVML_SUCCESS = 0.
using NvmlDevice = void*;
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlDriverVersion = int (*)(char*, unsigned);
using NvmlHandleByPci = int (*)(const char*, NvmlDevice*);
using NvmlClock = int (*)(NvmlDevice, int, unsigned*);
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2;

struct Nvml {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  NvmlInit init = lib ? reinterpret_cast<NvmlInit>(dlsym(lib, "nvmlInit_v2")) : nullptr;
  NvmlShutdown shutdown = lib ? reinterpret_cast<NvmlShutdown>(dlsym(lib, "nvmlShutdown")) : nullptr;
  NvmlDriverVersion driver = lib ? reinterpret_cast<NvmlDriverVersion>(dlsym(lib, "nvmlSystemGetDriverVersion")) : nullptr;
  NvmlHandleByPci by_pci = lib ? reinterpret_cast<NvmlHandleByPci>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2")) : nullptr;
  NvmlClock clock = lib ? reinterpret_cast<NvmlClock>(dlsym(lib, "nvmlDeviceGetClockInfo")) : nullptr;
  bool up = init && shutdown && driver && by_pci && clock && init() == 0;
  Nvml() = default;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml() {
    if (up) shutdown();
    if (lib) dlclose(lib);
  }
};

}  // namespace

RunRecord describe_run(int device_count, bool quick) {
  RunRecord run;
  run.quick = quick;
  char host[256] = {};
  run.host = gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  TRAINSIM_CHECK(cudaDriverGetVersion(&run.cuda_driver_api));
  TRAINSIM_CHECK(cudaRuntimeGetVersion(&run.cuda_runtime));
  run.cublaslt = static_cast<std::int64_t>(lt().cublasLtGetVersion());
  TRAINSIM_CHECK(ncclGetVersion(&run.nccl));
  run.driver = "unknown";
  {
    Nvml nvml;
    char v[96] = {};
    if (nvml.up && nvml.driver(v, sizeof v) == 0) run.driver = v;
  }
  for (int d = 0; d < device_count; ++d) {
    cudaDeviceProp p{};
    TRAINSIM_CHECK(cudaGetDeviceProperties(&p, d));
    DeviceRecord r;
    r.index = d;
    r.name = p.name;
    r.pci_bus = fmt::format("{:04x}:{:02x}:{:02x}", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    r.sms = p.multiProcessorCount;
    r.compute_capability = p.major * 10 + p.minor;
    r.memory_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
    int khz = 0;
    TRAINSIM_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d));
    r.sm_clock_max_mhz = khz / 1000;
    TRAINSIM_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, d));
    r.memory_clock_max_mhz = khz / 1000;
    run.devices.push_back(r);
  }
  return run;
}

void read_clocks(RunRecord& run) {
  Nvml nvml;
  if (!nvml.up) return;
  for (auto& d : run.devices) {
    // NVML wants the full "domain:bus:device.function" form, which CUDA gives.
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, d.index) != cudaSuccess) continue;
    NvmlDevice h = nullptr;
    if (nvml.by_pci(bus, &h) != 0) continue;
    unsigned mhz = 0;
    if (nvml.clock(h, kNvmlClockSm, &mhz) == 0) d.sm_clock_mhz = static_cast<int>(mhz);
    if (nvml.clock(h, kNvmlClockMem, &mhz) == 0) d.memory_clock_mhz = static_cast<int>(mhz);
  }
}

}  // namespace trainsim::calibration::cuda::detail
