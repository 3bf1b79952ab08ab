// NCCL collectives in one process over the first n local GPUs (ncclCommInitAll), timed as
// nccl-tests times them: host wall time over `iters` back-to-back operations after
// `warmup` ones, float data, sum. NCCL_ALGO and NCCL_PROTO are read when a communicator is
// created, so each forced algorithm/protocol gets communicators of its own.
#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/phases.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <ostream>

namespace trainsim::calibration::cuda::detail {
namespace {

struct Forced {
  std::string algorithm, protocol;  // "auto": left to NCCL's tuner
};

// Forcings NCCL honours for each collective (../shared/reference/nccl-and-hardware.md §1):
// Tree only for all-reduce; NVLS (NVLink SHARP) from sm_90 with the Simple protocol;
// all-to-all and send/receive are point-to-point and take no algorithm.
std::vector<Forced> forcings(const std::string& collective, int compute_capability) {
  std::vector<Forced> f;
  if (collective == "alltoall" || collective == "sendrecv") return f;
  for (const char* proto : {"LL", "LL128", "Simple"}) f.push_back({"Ring", proto});
  if (collective == "all_reduce")
    for (const char* proto : {"LL", "LL128", "Simple"}) f.push_back({"Tree", proto});
  if (compute_capability >= 90 && collective != "broadcast") f.push_back({"NVLS", "Simple"});
  return f;
}

const char* const kCollectives[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"};

class Group {
 public:
  Group(int n, std::size_t buffer_bytes, const Forced& forced) : n_(n), comms_(n), streams_(n), send_(n), recv_(n) {
    auto set = [](const char* key, const std::string& v) {
      if (v == "auto") unsetenv(key);
      else setenv(key, v.c_str(), 1);
    };
    set("NCCL_ALGO", forced.algorithm);
    set("NCCL_PROTO", forced.protocol);
    try {
      create(buffer_bytes);
    } catch (...) {
      release();
      throw;
    }
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  ~Group() { release(); }

 private:
  void create(std::size_t buffer_bytes) {
    const int n = n_;
    std::vector<int> devices(n);
    for (int r = 0; r < n; ++r) devices[r] = r;
    TRAINSIM_CHECK(ncclCommInitAll(comms_.data(), n, devices.data()));
    for (int r = 0; r < n; ++r) {
      TRAINSIM_CHECK(cudaSetDevice(r));
      TRAINSIM_CHECK(cudaStreamCreate(&streams_[r]));
      send_[r] = DeviceBuffer(buffer_bytes);
      recv_[r] = DeviceBuffer(buffer_bytes);
      fill_uniform(Elem::F32, send_[r].get(), buffer_bytes / 4, static_cast<std::uint32_t>(r), streams_[r]);
      TRAINSIM_CHECK(cudaMemsetAsync(recv_[r].get(), 0, buffer_bytes, streams_[r]));
    }
    sync();
  }

  void release() {
    for (int r = 0; r < n_; ++r) {
      if (comms_[r]) ncclCommAbort(comms_[r]);  // abort: also safe after a failed operation
      cudaSetDevice(r);
      if (streams_[r]) cudaStreamDestroy(streams_[r]);
      send_[r] = DeviceBuffer();
      recv_[r] = DeviceBuffer();
    }
  }

 public:
  void sync() {
    for (int r = 0; r < n_; ++r) {
      TRAINSIM_CHECK(cudaSetDevice(r));
      TRAINSIM_CHECK(cudaStreamSynchronize(streams_[r]));
    }
  }

  // One operation of `bytes` (nccl-tests' size) on every rank, as one NCCL group.
  void run(const std::string& c, std::size_t bytes, bool in_place) {
    const std::size_t count = bytes / 4, per_rank = count / n_;
    TRAINSIM_CHECK(ncclGroupStart());
    for (int r = 0; r < n_; ++r) {
      auto* s = static_cast<float*>(send_[r].get());
      auto* d = static_cast<float*>(recv_[r].get());
      ncclComm_t comm = comms_[r];
      cudaStream_t st = streams_[r];
      if (c == "all_reduce") {
        TRAINSIM_CHECK(ncclAllReduce(in_place ? d : s, d, count, ncclFloat, ncclSum, comm, st));
      } else if (c == "all_gather") {
        TRAINSIM_CHECK(ncclAllGather(in_place ? d + r * per_rank : s, d, per_rank, ncclFloat, comm, st));
      } else if (c == "reduce_scatter") {
        TRAINSIM_CHECK(ncclReduceScatter(in_place ? d : s, in_place ? d + r * per_rank : d, per_rank, ncclFloat, ncclSum, comm, st));
      } else if (c == "broadcast") {
        TRAINSIM_CHECK(ncclBroadcast(in_place ? d : s, d, count, ncclFloat, 0, comm, st));
      } else if (c == "alltoall") {  // as nccl-tests builds it: a send and a receive per peer
        for (int p = 0; p < n_; ++p) {
          TRAINSIM_CHECK(ncclSend(s + p * per_rank, per_rank, ncclFloat, p, comm, st));
          TRAINSIM_CHECK(ncclRecv(d + p * per_rank, per_rank, ncclFloat, p, comm, st));
        }
      } else {  // sendrecv: a ring of pairs, rank r to r + 1
        TRAINSIM_CHECK(ncclSend(s, count, ncclFloat, (r + 1) % n_, comm, st));
        TRAINSIM_CHECK(ncclRecv(d, count, ncclFloat, (r + n_ - 1) % n_, comm, st));
      }
    }
    TRAINSIM_CHECK(ncclGroupEnd());
  }

  // Microseconds per operation.
  double time_us(const std::string& c, std::size_t bytes, bool in_place, int warmup, int iters) {
    for (int i = 0; i < warmup; ++i) run(c, bytes, in_place);
    sync();
    const double start = now_s();
    for (int i = 0; i < iters; ++i) run(c, bytes, in_place);
    sync();
    return (now_s() - start) * 1e6 / iters;
  }

 private:
  int n_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<DeviceBuffer> send_, recv_;
};

}  // namespace

void measure_collectives(const Phase& phase, const RunRecord& run, const std::vector<std::int64_t>& sizes,
                         const std::function<void(const CollectiveRecord&)>& done) {
  const int gpus = static_cast<int>(run.devices.size());
  if (gpus < 2) {
    phase.note("collectives: one GPU: NCCL collectives need two or more; fit them from nccl-tests logs instead");
    return;
  }
  // Group sizes: all GPUs and two first (the ends of the range), then the rest.
  std::vector<int> counts = {gpus};
  if (gpus > 2) counts.push_back(2);
  for (int n = 3; n < gpus; ++n) counts.push_back(n);
  int cc = run.devices.front().compute_capability;
  std::int64_t largest = 0;
  for (auto s : sizes) largest = s > largest ? s : largest;
  // nccl-tests' defaults: 5 warm-up and 20 timed iterations; quick runs 2 and 5.
  const int warmup = run.quick ? 2 : 5, iters = run.quick ? 5 : 20;
  // Sweeps: everything as NCCL chooses first, then each forcing, so that a budget cut
  // keeps the default behaviour of every collective and group size.
  struct Sweep {
    Forced forced;
    int n;
    std::vector<std::string> collectives;
  };
  std::vector<Sweep> sweeps;
  for (int n : counts) sweeps.push_back({{"auto", "auto"}, n, {std::begin(kCollectives), std::end(kCollectives)}});
  std::vector<Forced> all_forced;
  for (const char* c : kCollectives) {
    for (const Forced& f : forcings(c, cc)) {
      bool seen = false;
      for (const auto& a : all_forced) seen = seen || (a.algorithm == f.algorithm && a.protocol == f.protocol);
      if (!seen) all_forced.push_back(f);
    }
  }
  for (const Forced& f : all_forced) {
    for (int n : counts) {
      Sweep s{f, n, {}};
      for (const char* c : kCollectives)
        for (const Forced& g : forcings(c, cc))
          if (g.algorithm == f.algorithm && g.protocol == f.protocol) s.collectives.emplace_back(c);
      sweeps.push_back(s);
    }
  }
  std::size_t cut = 0;
  for (std::size_t w = 0; w < sweeps.size(); ++w) {
    if (!phase.budget.allows(now_s())) {
      cut = sweeps.size() - w;
      break;
    }
    const Sweep& sw = sweeps[w];
    std::size_t free = 0, total = 0;
    TRAINSIM_CHECK(cudaSetDevice(0));
    TRAINSIM_CHECK(cudaMemGetInfo(&free, &total));
    // Two buffers per GPU of the largest size, within 80 % of free memory.
    std::size_t buffer = static_cast<std::size_t>(largest);
    while (buffer > 8 && 2 * buffer > free / 10 * 8) buffer /= 2;
    try {
      Group group(sw.n, buffer, sw.forced);
      for (const auto& c : sw.collectives) {
        CollectiveRecord rec;
        rec.collective = c;
        rec.algorithm = sw.forced.algorithm;
        rec.protocol = sw.forced.protocol;
        rec.redop = c == "all_reduce" || c == "reduce_scatter" ? "sum" : "none";
        rec.root = c == "broadcast" ? 0 : -1;
        rec.warmup_iters = warmup;
        rec.iters = iters;
        rec.host = run.host;
        rec.devices.assign(run.devices.begin(), run.devices.begin() + sw.n);
        try {
          for (std::int64_t size : sizes) {
            if (!phase.budget.allows(now_s())) break;
            // Whole elements on every rank, as nccl-tests rounds sizes.
            const std::size_t bytes = static_cast<std::size_t>(size) / (4 * sw.n) * (4 * sw.n);
            if (bytes == 0 || bytes > buffer) continue;
            CollectiveRow row;
            row.bytes = static_cast<std::int64_t>(bytes);
            row.count = static_cast<std::int64_t>(bytes / 4);
            row.out_of_place_us = group.time_us(c, bytes, false, warmup, iters);
            // All-to-all and send/receive have no in-place form: their in-place columns
            // repeat the out-of-place operation (said in the log's header).
            const bool in_place = c != "alltoall" && c != "sendrecv";
            row.in_place_us = group.time_us(c, bytes, in_place, warmup, iters);
            rec.rows.push_back(row);
          }
        } catch (const MeasureError& e) {
          phase.note(fmt::format("collectives: {} over {} GPUs with NCCL_ALGO={} NCCL_PROTO={} failed after {} sizes: {}",
                                 c, sw.n, sw.forced.algorithm, sw.forced.protocol, rec.rows.size(), e.what()));
          if (rec.rows.size() >= 3) done(rec);
          break;  // the communicators may be unusable after a failure: the next sweep makes new ones
        }
        if (!rec.rows.empty()) done(rec);
        if (phase.progress)
          *phase.progress << fmt::format("  {} over {} GPUs, NCCL_ALGO={} NCCL_PROTO={}: {} sizes\n", c, sw.n,
                                         sw.forced.algorithm, sw.forced.protocol, rec.rows.size());
      }
    } catch (const MeasureError& e) {
      phase.note(fmt::format("collectives: communicators over {} GPUs with NCCL_ALGO={} NCCL_PROTO={} failed: {}", sw.n,
                             sw.forced.algorithm, sw.forced.protocol, e.what()));
    }
  }
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  if (cut > 0) phase.note(fmt::format("collectives: the time budget ended the phase; {} of {} sweeps not measured", cut, sweeps.size()));
}

}  // namespace trainsim::calibration::cuda::detail
