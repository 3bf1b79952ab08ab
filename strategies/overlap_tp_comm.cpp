// Tensor-parallel communication overlapped with its GEMMs (Transformer Engine's
// userbuffers / Megatron-LM --tp-comm-overlap; Wang et al., ASPLOS'23): a GEMM and the
// collective that produces its input or consumes its output are cut into t chunks and
// pipelined, so chunk j's transfer runs under chunk j+1's compute. Only one chunk of the
// transfer stays exposed; the compute chunks that run beside a transfer are slowed by the
// profile's contention factor (the engine applies it while communication runs).
//
// Which GEMM a collective runs beside follows Transformer Engine's userbuffers setup
// (transformer_engine/pytorch/module/base.py, initialize_ub: the ring-exchange all-gathers
// of qkv/fc1 fprop and proj/fc2 dgrad, the pipelined reduce-scatters of proj/fc2 fprop,
// the bulk overlaps of qkv/fc1 dgrad and wgrad):
//  * an all-gather makes the input of the GEMM after it: forward, the sequence-parallel
//    gather before a column-parallel GEMM; backward, the gather of the output gradient
//    before a row-parallel GEMM's backward;
//  * a reduce-scatter (an all-reduce without sequence parallelism) takes the output of the
//    GEMM before it;
//  * a column-parallel GEMM's backward meets both: the all-gather of its saved input runs
//    beside the input-gradient GEMM and the reduce-scatter of that gradient beside the
//    weight-gradient GEMM, two GEMMs of equal FLOPs, so each collective gets half of it.
// Userbuffers covers the transformer layers' linears only. Outside them Megatron-LM's own
// column-parallel linear (the output layer) overlaps its backward the same way
// (LinearWithGradAccumulationAndAsyncCommunication: the input all-gather beside the
// input-gradient GEMM, the reduce-scatter beside the weight-gradient GEMM), while its
// forward all-gather and the embedding's collectives block the stream.
#include <map>
#include <optional>
#include <utility>

#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

namespace {

bool is_gather(const Item& it) { return it.collective.op == hardware::Collective::ALL_GATHER; }

// Transfer j, then the compute that needs it; transfer j+1 starts without waiting for
// compute j (its stream orders it after transfer j).
void gather_beside(std::vector<Item>& out, Item comm, const Item& compute, std::int64_t k) {
  for (std::int64_t j = 0; j < k; ++j) {
    Item c = comm;
    Item x = compute;
    x.alloc_bytes = j == 0 ? compute.alloc_bytes : 0;
    x.free_bytes = j == k - 1 ? compute.free_bytes : 0;
    if (j > 0) c.deps.clear();
    out.push_back(std::move(c));
    out.push_back(std::move(x));
  }
}

// Compute j, then its transfer; compute j+1 follows compute j, not transfer j.
void scatter_beside(std::vector<Item>& out, const Item& comm, const Item& compute, std::int64_t k) {
  for (std::int64_t j = 0; j < k; ++j) {
    Item x = compute;
    x.alloc_bytes = j == 0 ? compute.alloc_bytes : 0;
    x.free_bytes = j == k - 1 ? compute.free_bytes : 0;
    if (j > 0) x.deps = Dep::previous(2);
    Item c = comm;
    c.deps = Dep::previous(1);
    out.push_back(std::move(x));
    out.push_back(std::move(c));
  }
}

bool is_boundary_gemm(const models::Op& op) { return op.tp_boundary != models::TpBoundary::NONE; }

// Cuts the chunk templates of one role. The GEMM beside a collective may share its segment
// with the kernels around it (a segment runs everything between two collectives: the
// forward's qkv, attention core and proj); only that GEMM is pipelined, so the segment is
// cut in two, once per segment for every layer that shares it.
struct Splitter {
  Role& role;
  std::int64_t k;
  std::uint8_t tp_stream;
  std::int32_t num_layers;
  // (segment, GEMM first?) → {the GEMM's segment, the rest's}
  std::map<std::pair<std::uint32_t, bool>, std::pair<std::uint32_t, std::uint32_t>> cuts;

  bool overlapped(const Item& it, bool backward) const {
    if (it.kind != Item::Kind::COLLECTIVE || it.collective.dim != Dim::TENSOR) return false;
    const bool in_layer = it.layer >= 0 && it.layer < num_layers;
    return in_layer || (backward && it.layer == num_layers);
  }

  // The collective as one of k pieces on the tensor-parallel stream.
  Item piece(Item comm) const {
    comm.collective.bytes /= static_cast<double>(k);
    comm.collective.latency_scale /= static_cast<double>(k);  // one ring pass spread over the chunks
    comm.stream = tp_stream;
    return comm;
  }

  Item share(const Item& compute, double part) const {
    Item x = compute;
    x.fraction *= part / static_cast<double>(k);
    return x;
  }

  // Whether the compute item's segment starts (gemm_first) or ends with a GEMM at a
  // tensor-parallel boundary.
  bool gemm_at(const Item& compute, bool gemm_first) const {
    const auto& ops = role.segments[compute.segment].ops;
    return !ops.empty() && is_boundary_gemm(gemm_first ? ops.front() : ops.back());
  }

  // The compute item cut into its boundary GEMM and the rest, in execution order (the
  // GEMM's item first when gemm_first). Allocation at the start of the first, free at the
  // end of the second, as the whole item had them. A one-op segment is not cut (rest empty).
  std::pair<Item, std::optional<Item>> cut(const Item& compute, bool gemm_first) {
    const Segment& seg = role.segments[compute.segment];
    if (seg.ops.size() < 2) return {compute, std::nullopt};
    auto [known, fresh] = cuts.try_emplace({compute.segment, gemm_first});
    if (fresh) {
      Segment gemm, rest;
      gemm.of_layer = rest.of_layer = seg.of_layer;
      const models::Op& op = gemm_first ? seg.ops.front() : seg.ops.back();
      gemm.name = seg.name + "." + op.name;
      gemm.ops = {op};
      rest.name = seg.name + ".rest";
      rest.ops.assign(seg.ops.begin() + (gemm_first ? 1 : 0), seg.ops.end() - (gemm_first ? 0 : 1));
      known->second.first = static_cast<std::uint32_t>(role.segments.size());
      role.segments.push_back(std::move(gemm));
      known->second.second = static_cast<std::uint32_t>(role.segments.size());
      role.segments.push_back(std::move(rest));
    }
    Item first = compute, second = compute;
    first.segment = gemm_first ? known->second.first : known->second.second;
    second.segment = gemm_first ? known->second.second : known->second.first;
    first.free_bytes = 0;
    second.alloc_bytes = 0;
    second.deps = Dep::previous();
    return {first, std::optional<Item>(second)};
  }

  void run(std::vector<Item>& items, bool backward) {
    // Each pipelined collective becomes k pieces beside k shares of its GEMM, and a cut
    // GEMM leaves its segment's rest behind: sized once, the thousands of items are not
    // moved again as the list grows.
    std::size_t pipelined = 0;
    for (const Item& it : items) pipelined += overlapped(it, backward);
    std::vector<Item> out;
    out.reserve(items.size() + pipelined * static_cast<std::size_t>(2 * k + 1));
    const auto compute_at = [&](std::size_t i) { return i < items.size() && items[i].kind == Item::Kind::COMPUTE; };
    bool last_is_whole_compute = false;  // out.back() is a compute not yet pipelined
    for (std::size_t i = 0; i < items.size(); ++i) {
      Item& it = items[i];
      if (!overlapped(it, backward)) {
        last_is_whole_compute = it.kind == Item::Kind::COMPUTE;
        out.push_back(std::move(it));
        continue;
      }
      if (is_gather(it)) {
        // Selective recompute puts the attention core's rerun before the backward that
        // starts with the row-parallel GEMM; Megatron reruns it after that GEMM's input
        // gradient, inside the core's own backward, so it moves behind the GEMM.
        std::size_t at = i + 1;
        std::optional<Item> rerun;
        if (compute_at(at) && items[at].category == Category::RECOMPUTE && compute_at(at + 1) &&
            gemm_at(items[at + 1], true)) {
          rerun = std::move(items[at]);
          ++at;
        }
        if (!compute_at(at) || !gemm_at(items[at], true)) {
          last_is_whole_compute = false;
          out.push_back(std::move(it));
          continue;
        }
        auto [gemm, rest] = cut(items[at], true);
        // The same GEMM's reduce-scatter right after it: it takes the second half.
        const bool then_scatter = !rest && !rerun && at + 1 < items.size() && overlapped(items[at + 1], backward) &&
                                  !is_gather(items[at + 1]);
        if (then_scatter) {
          Item first = share(gemm, 0.5), second = share(gemm, 0.5);
          first.free_bytes = 0;
          second.alloc_bytes = 0;
          second.deps = Dep::previous();
          gather_beside(out, piece(std::move(it)), first, k);
          scatter_beside(out, piece(std::move(items[at + 1])), second, k);
          last_is_whole_compute = false;
          i = at + 1;
          continue;
        }
        gather_beside(out, piece(std::move(it)), share(gemm, 1.0), k);
        last_is_whole_compute = false;
        if (rerun) {
          rerun->deps = Dep::previous();
          out.push_back(std::move(*rerun));
        }
        if (rest) {
          out.push_back(std::move(*rest));
          last_is_whole_compute = true;
        }
        i = at;
        continue;
      }
      if (!last_is_whole_compute || !gemm_at(out.back(), false)) {
        last_is_whole_compute = false;
        out.push_back(std::move(it));
        continue;
      }
      const Item compute = std::move(out.back());
      out.pop_back();
      auto [before, gemm] = cut(compute, false);
      if (gemm) out.push_back(std::move(before));
      scatter_beside(out, piece(std::move(it)), share(gemm ? *gemm : before, 1.0), k);
      last_is_whole_compute = false;
    }
    items = std::move(out);
  }
};

}  // namespace

std::string overlap_tp_comm(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "must run before the schedule";
  const std::int64_t t = program.applied.tensor;
  if (t > 1) {
    const std::uint8_t tp_stream = program.stream("tp-comm");
    const auto layers = static_cast<std::int32_t>(program.spec.model.layers);
    for (auto& role : program.roles) {
      Splitter split{role, t, tp_stream, layers, {}};
      for (auto& chunk : role.chunks) {
        split.run(chunk.forward, false);
        split.run(chunk.backward, true);
      }
    }
  }
  program.passes_run.emplace_back("overlap-tp-comm");
  return {};
}

}  // namespace trainsim::strategies::detail
