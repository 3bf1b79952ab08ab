// Tensor-parallel communication overlapped with its GEMMs (Transformer Engine's
// userbuffers / Megatron-LM --tp-comm-overlap; Wang et al., ASPLOS'23). Which GEMM a
// collective runs beside, and how, follows Transformer Engine's userbuffers defaults
// (transformer_engine/pytorch/module/base.py, initialize_ub, v1.8 as Megatron-Core 0.8 ran
// it: `methods` and the num_splits defaults):
//  * ring exchange (qkv and fc1 forward, proj and fc2 input gradient): the all-gather that
//    makes the GEMM's input is t − 1 neighbour transfers of one shard each; the GEMM runs in
//    t chunks, the first on the local shard at once, chunk j after transfer j;
//  * pipeline (proj and fc2 forward): the GEMM runs in 4 chunks (num_splits 4) and each
//    chunk's reduce-scatter follows it, under the next chunk;
//  * bulk (qkv and fc1 input and weight gradients): a column-parallel GEMM's backward
//    meets both collectives, uncut. The all-gather of its saved input runs beside the
//    input-gradient GEMM, which does not need it; the weight-gradient GEMM waits for it;
//    the reduce-scatter of the input gradient runs beside the weight-gradient GEMM.
// Each chunk is a GEMM of its own shape, 1/t or 1/4 of the rows (the tokens), timed at the
// efficiency of that shape with a launch of its own; a backward that a ring exchange feeds
// runs its input gradient in chunks and its weight gradient whole after the last transfer
// (it reduces over all the gathered rows). Compute beside a pipelined or bulk transfer is
// slowed by the profile's contention factor (their kernels take SMs; the engine applies it
// while they run); the ring exchange's copies run on the copy engines (add_ub's default
// use_ce) and leave the SMs to the GEMM.
// Userbuffers covers the transformer layers' linears only. Outside them Megatron-LM's own
// column-parallel linear (the output layer) overlaps its backward the bulk way
// (LinearWithGradAccumulationAndAsyncCommunication: the input all-gather issued async
// before the input-gradient GEMM, the reduce-scatter before the weight-gradient GEMM),
// while its forward all-gather and the embedding's collectives block the stream.
#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

namespace {

bool is_gather(const Item& it) { return it.collective.op == hardware::Collective::ALL_GATHER; }

// Transformer Engine's default chunk count for a pipelined reduce-scatter (initialize_ub:
// num_splits 4 for the "pipeline" method, whatever the tensor-parallel size).
constexpr std::int64_t PIPELINE_SPLITS = 4;

// `deps` as seen from an item placed `by` positions later in the same list.
DepList shifted(const DepList& deps, std::int32_t by) {
  DepList out;
  for (Dep d : deps) {
    if (d.target == Dep::Target::PREVIOUS) d.offset = Dep::narrow_offset(d.offset + by);
    out.push_back(d);
  }
  return out;
}

// The dependencies of `compute` other than on the item right before it, which the caller
// replaces.
void add_foreign(DepList& to, const Item& compute) {
  for (const Dep& d : compute.deps)
    if (d.target != Dep::Target::PREVIOUS) to.push_back(d);
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
  // Segments made from a role's segments, looked up for every layer: a role makes a few (a
  // list searched in turn is quicker than a map).
  struct Cut {
    std::uint32_t segment;
    bool gemm_first;
    std::uint32_t gemm, rest;  // the GEMM's segment, the rest's
  };
  std::vector<Cut> cuts;
  struct ChunkSegment {
    std::uint32_t gemm;  // a GEMM's segment
    std::int64_t parts;
    std::uint32_t chunk;  // the segment of one of its `parts` chunks along its rows
  };
  std::vector<ChunkSegment> chunk_segments;

  bool overlapped(const Item& it, bool backward) const {
    if (it.kind != Item::Kind::COLLECTIVE || it.collective.dim != Dim::TENSOR) return false;
    const bool in_layer = it.layer >= 0 && it.layer < num_layers;
    return in_layer || (backward && it.layer == num_layers);
  }

  // The collective as one of n pieces on the tensor-parallel stream.
  Item piece(Item comm, std::int64_t n) const {
    comm.collective.bytes /= static_cast<double>(n);
    comm.collective.latency_scale /= static_cast<double>(n);  // one ring pass spread over the pieces
    comm.stream = tp_stream;
    return comm;
  }

  static Item share(const Item& compute, double part) {
    Item x = compute;
    x.fraction *= part;
    return x;
  }

  // One of `parts` chunks of the GEMM item along its rows (the tokens the collective
  // gathers or scatters), paying `cost`: a GEMM of m/parts rows with its share of the FLOPs
  // and bytes and a launch of its own. A segment without a shaped GEMM pays 1/parts.
  Item chunk(const Item& gemm, std::int64_t parts, Cost cost) {
    Item x = gemm;
    x.cost = cost;
    const Segment& seg = role.segments[gemm.segment];
    if (seg.ops.size() != 1 || seg.ops.front().gemm.m < parts) {
      x.fraction /= static_cast<double>(parts);
      return x;
    }
    auto known = std::find_if(chunk_segments.begin(), chunk_segments.end(),
                              [&](const ChunkSegment& k) { return k.gemm == gemm.segment && k.parts == parts; });
    if (known == chunk_segments.end()) {
      Segment part;
      part.of_layer = seg.of_layer;
      part.name = seg.name + ".chunk" + std::to_string(parts);
      models::Op op = seg.ops.front();
      const double n = static_cast<double>(parts);
      op.gemm.m = (op.gemm.m + parts - 1) / parts;
      op.fwd_flops /= n;
      op.bwd_input_flops /= n;
      op.bwd_weight_flops /= n;
      op.bwd_extra_flops /= n;
      op.fwd_bytes /= n;
      op.bwd_bytes /= n;
      op.activation_bytes /= n;
      // wgrad_accumulate_bytes and wgrad_add_bytes stay whole: a chunk's weight gradient
      // would add into the whole main_grad all the same.
      op.params = 0;  // held once, by the whole GEMM
      part.ops = {std::move(op)};
      known = chunk_segments.insert(chunk_segments.end(),
                                    {gemm.segment, parts, static_cast<std::uint32_t>(role.segments.size())});
      role.segments.push_back(std::move(part));
    }
    x.segment = known->chunk;
    return x;
  }

  // Ring exchange: chunk 0 of the GEMM on the local shard, then per neighbour transfer j
  // (one shard: 1/(t−1) of the gather's buffer moves B/t per rank) chunk j, which waits for
  // it. The first transfer and chunk 0 wait for what the gather waited for; each later
  // transfer follows the one before on its stream.
  void ring_exchange(std::vector<Item>& out, Item gather, const Item& gemm) {
    const std::int64_t transfers = k - 1;
    Item comm = piece(std::move(gather), transfers);
    // Megatron-LM passes no userbuffers config, so each buffer takes add_ub's defaults:
    // use_ce true, the ring exchange's peer-to-peer copies on the copy engines.
    comm.collective.occupies_sms = false;
    // A backward: the input gradient in chunks, then the weight gradient whole.
    const bool backward = gemm.cost == Cost::BACKWARD;
    const Item part = chunk(gemm, k, backward ? Cost::BACKWARD_INPUT : gemm.cost);
    for (std::int64_t j = 0; j < k; ++j) {
      Item x = part;
      x.alloc_bytes = j == 0 ? gemm.alloc_bytes : 0;
      x.free_bytes = j == k - 1 && !backward ? gemm.free_bytes : 0;
      if (j == 0) {
        x.deps = comm.deps;
        add_foreign(x.deps, gemm);
      } else {
        Item c = comm;
        if (j == 1)
          c.deps = shifted(comm.deps, 1);
        else
          c.deps.clear();
        out.push_back(std::move(c));
        x.deps = Dep::previous();
      }
      out.push_back(std::move(x));
    }
    if (backward) {
      Item w = gemm;
      w.cost = Cost::BACKWARD_WEIGHT;
      w.alloc_bytes = 0;
      w.deps = Dep::previous();
      out.push_back(std::move(w));
    }
  }

  // Pipeline: GEMM chunk j, then its reduce-scatter; chunk j+1 follows chunk j, not the
  // transfer.
  void pipeline(std::vector<Item>& out, Item scatter, const Item& gemm) {
    const Item comm = piece(std::move(scatter), PIPELINE_SPLITS);
    const Item part = chunk(gemm, PIPELINE_SPLITS, gemm.cost);
    for (std::int64_t j = 0; j < PIPELINE_SPLITS; ++j) {
      Item x = part;
      x.alloc_bytes = j == 0 ? gemm.alloc_bytes : 0;
      x.free_bytes = j == PIPELINE_SPLITS - 1 ? gemm.free_bytes : 0;
      if (j > 0) x.deps = Dep::previous(2);
      Item c = comm;
      c.deps = Dep::previous(1);
      out.push_back(std::move(x));
      out.push_back(std::move(c));
    }
  }

  // Bulk: [gather, input-gradient GEMM, weight-gradient GEMM, reduce-scatter]. The
  // input-gradient GEMM waits for what the gather waited for, not for the gather; the
  // weight-gradient GEMM for both; the reduce-scatter for the input gradient.
  void bulk(std::vector<Item>& out, Item gather, const Item& gemm, Item scatter) const {
    Item g = piece(std::move(gather), 1);
    const bool backward = gemm.cost == Cost::BACKWARD;
    Item dgrad = backward ? gemm : share(gemm, 0.5), wgrad = backward ? gemm : share(gemm, 0.5);
    if (backward) {
      dgrad.cost = Cost::BACKWARD_INPUT;
      wgrad.cost = Cost::BACKWARD_WEIGHT;
    }
    dgrad.deps = shifted(g.deps, 1);
    add_foreign(dgrad.deps, gemm);
    dgrad.free_bytes = 0;
    wgrad.alloc_bytes = 0;
    wgrad.deps = {Dep::previous(1), Dep::previous(2)};
    Item rs = piece(std::move(scatter), 1);
    rs.deps = Dep::previous(2);
    out.push_back(std::move(g));
    out.push_back(std::move(dgrad));
    out.push_back(std::move(wgrad));
    out.push_back(std::move(rs));
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
    auto known = std::find_if(cuts.begin(), cuts.end(), [&](const Cut& k) {
      return k.segment == compute.segment && k.gemm_first == gemm_first;
    });
    if (known == cuts.end()) {
      Segment gemm, rest;
      gemm.of_layer = rest.of_layer = seg.of_layer;
      const models::Op& op = gemm_first ? seg.ops.front() : seg.ops.back();
      gemm.name = seg.name + "." + op.name;
      gemm.ops = {op};
      rest.name = seg.name + ".rest";
      rest.ops.assign(seg.ops.begin() + (gemm_first ? 1 : 0), seg.ops.end() - (gemm_first ? 0 : 1));
      const auto at = static_cast<std::uint32_t>(role.segments.size());
      known = cuts.insert(cuts.end(), {compute.segment, gemm_first, at, at + 1});
      role.segments.push_back(std::move(gemm));
      role.segments.push_back(std::move(rest));
    }
    Item first = compute, second = compute;
    first.segment = gemm_first ? known->gemm : known->rest;
    second.segment = gemm_first ? known->rest : known->gemm;
    first.free_bytes = 0;
    second.alloc_bytes = 0;
    second.deps = Dep::previous();
    return {first, std::optional<Item>(second)};
  }

  // Cuts items[i] (with the items after it that its overlap takes) into `out`; returns the
  // index of the next item to cut. `whole_compute`: out.back() is a compute not yet pipelined;
  // `reach`: the furthest item read so far.
  std::size_t cut_next(std::vector<Item>& items, std::size_t i, bool backward, std::vector<Item>& out,
                       bool& whole_compute, std::size_t& reach) {
    const auto compute_at = [&](std::size_t j) {
      reach = std::max(reach, j);
      return j < items.size() && items[j].kind == Item::Kind::COMPUTE;
    };
    Item& it = items[i];
    if (!overlapped(it, backward)) {
      whole_compute = it.kind == Item::Kind::COMPUTE;
      out.push_back(std::move(it));
      return i + 1;
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
        whole_compute = false;
        out.push_back(std::move(it));
        return i + 1;
      }
      auto [gemm, rest] = cut(items[at], true);
      // The same GEMM's reduce-scatter right after it: it takes the second half.
      reach = std::max(reach, at + 1);
      const bool then_scatter = !rest && !rerun && at + 1 < items.size() && overlapped(items[at + 1], backward) &&
                                !is_gather(items[at + 1]);
      if (then_scatter) {
        bulk(out, std::move(it), gemm, std::move(items[at + 1]));
        whole_compute = false;
        return at + 2;
      }
      ring_exchange(out, std::move(it), gemm);
      whole_compute = false;
      if (rerun) {
        rerun->deps = Dep::previous();
        out.push_back(std::move(*rerun));
      }
      if (rest) {
        out.push_back(std::move(*rest));
        whole_compute = true;
      }
      return at + 1;
    }
    if (!whole_compute || !gemm_at(out.back(), false)) {
      whole_compute = false;
      out.push_back(std::move(it));
      return i + 1;
    }
    const Item compute = std::move(out.back());
    out.pop_back();
    auto [before, gemm] = cut(compute, false);
    if (gemm) out.push_back(std::move(before));
    pipeline(out, std::move(it), gemm ? *gemm : before);
    whole_compute = false;
    return i + 1;
  }

  void run(std::vector<Item>& items, bool backward) {
    // Each pipelined collective becomes k pieces beside k shares of its GEMM, and a cut
    // GEMM leaves its segment's rest behind: sized once, the thousands of items are not
    // moved again as the list grows.
    std::size_t pipelined = 0;
    for (const Item& it : items) pipelined += overlapped(it, backward);
    std::vector<Item> out;
    out.reserve(items.size() + pipelined * static_cast<std::size_t>(2 * std::max(k, PIPELINE_SPLITS) + 1));
    bool whole_compute = false;  // out.back() is a compute not yet pipelined
    // A chunk's transformer layers, alike but for the layer they name, cut alike: a layer's
    // items alike to those of a layer cut before copy what that one became, when cutting that
    // one read nothing outside it — no item of the next layer, and not out.back() before it
    // (which a reduce-scatter opening a layer would pipeline). (Cutting moves items, and a
    // moved item is unchanged: the items stay comparable.)
    static_assert(std::is_trivially_copyable_v<Item>);
    const auto in_layer = [&](std::int32_t layer) { return layer >= 0 && layer < num_layers; };
    struct Layer {
      std::size_t begin = 0, size = 0;          // its items
      std::size_t out_begin = 0, out_size = 0;  // what they became
      bool whole_compute = false;               // after it
    };
    LayerKinds<Layer> kinds;
    for (std::size_t i = 0; i < items.size();) {
      const std::size_t end = layer_block_end(items, i);
      const std::int32_t layer = items[i].layer;
      if (Layer* alike = in_layer(layer) ? kinds.find(items, i, end - i) : nullptr; alike != nullptr) {
        const std::size_t from = out.size();
        for (std::size_t j = 0; j < alike->out_size; ++j) {
          out.push_back(out[alike->out_begin + j]);
          out.back().layer = layer;
        }
        alike->out_begin = from;
        whole_compute = alike->whole_compute;
        i = end;
        continue;
      }
      const std::size_t begin = i, out_begin = out.size();
      const bool reads_before = overlapped(items[i], backward) && !is_gather(items[i]);
      std::size_t reach = i;
      while (i < end) i = cut_next(items, i, backward, out, whole_compute, reach);
      if (in_layer(layer) && !reads_before && reach < end && i == end)
        kinds.keep({begin, end - begin, out_begin, out.size() - out_begin, whole_compute});
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
      Splitter split{role, t, tp_stream, layers, {}, {}};
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
