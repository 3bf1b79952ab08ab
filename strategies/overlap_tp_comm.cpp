// Tensor-parallel communication overlapped with its GEMMs (Transformer Engine's
// userbuffers / Megatron-LM --tp-comm-overlap; Wang et al., ASPLOS'23): a GEMM and the
// collective that produces its input or consumes its output are cut into t chunks and
// pipelined, so chunk j's transfer runs under chunk j+1's compute. Only one chunk of the
// transfer stays exposed; the compute chunks that run beside a transfer are slowed by the
// profile's contention factor (the engine applies it while communication runs).
#include <utility>

#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

namespace {

void split(std::vector<Item>& items, std::int64_t k, std::uint8_t tp_stream) {
  std::vector<Item> out;
  {
    // Each tensor-parallel collective and its GEMM become 2k items (the template is replaced,
    // so its items are moved, not copied, where they are kept whole).
    std::size_t collectives = 0;
    for (const Item& it : items) collectives += it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::TENSOR;
    out.reserve(items.size() + collectives * static_cast<std::size_t>(2 * k));
  }
  std::vector<bool> consumed(items.size(), false);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (consumed[i]) continue;
    Item& it = items[i];
    const bool tp = it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::TENSOR;
    if (!tp) {
      out.push_back(std::move(it));
      continue;
    }
    const bool after_compute = !out.empty() && out.back().kind == Item::Kind::COMPUTE && i > 0 && !consumed[i - 1] &&
                               items[i - 1].kind == Item::Kind::COMPUTE;
    const bool before_compute = i + 1 < items.size() && items[i + 1].kind == Item::Kind::COMPUTE;
    if (!after_compute && !before_compute) {
      out.push_back(std::move(it));
      continue;
    }
    Item comm = std::move(it);
    comm.collective.bytes /= static_cast<double>(k);
    comm.collective.latency_scale /= static_cast<double>(k);  // one ring pass spread over the chunks
    comm.stream = tp_stream;
    Item compute;
    if (after_compute) {
      compute = std::move(out.back());
      out.pop_back();
    } else {
      compute = std::move(items[i + 1]);
      consumed[i + 1] = true;
    }
    compute.fraction /= static_cast<double>(k);
    const std::int64_t alloc = compute.alloc_bytes, free = compute.free_bytes;
    for (std::int64_t j = 0; j < k; ++j) {
      Item x = compute;
      x.alloc_bytes = j == 0 ? alloc : 0;
      x.free_bytes = j == k - 1 ? free : 0;
      Item c = comm;
      if (after_compute) {
        // compute j, then its transfer; compute j+1 follows compute j, not transfer j.
        if (j > 0) x.deps = Dep::previous(2);
        c.deps = Dep::previous(1);
        out.push_back(std::move(x));
        out.push_back(std::move(c));
      } else {
        // transfer j, then the compute that needs it; transfer j+1 starts without waiting
        // for compute j (its stream orders it after transfer j).
        if (j > 0) c.deps.clear();
        out.push_back(std::move(c));
        out.push_back(std::move(x));
      }
    }
  }
  items = std::move(out);
}

}  // namespace

std::string overlap_tp_comm(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "must run before the schedule";
  const std::int64_t t = program.applied.tensor;
  if (t > 1) {
    const std::uint8_t tp_stream = program.stream("tp-comm");
    for (auto& role : program.roles)
      for (auto& chunk : role.chunks) {
        split(chunk.forward, t, tp_stream);
        split(chunk.backward, t, tp_stream);
      }
  }
  program.passes_run.emplace_back("overlap-tp-comm");
  return {};
}

}  // namespace trainsim::strategies::detail
