#include "strategies/lower.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "sim/simulate.hpp"

namespace trainsim::strategies {

const char* to_string(Fidelity f) { return f == Fidelity::FULL ? "full" : "fast"; }

namespace {

using Parts = std::array<sim::Time, static_cast<int>(Category::COUNT)>;

hardware::KernelClass kernel_class(models::ComputeClass c) {
  switch (c) {
    case models::ComputeClass::GEMM: return hardware::KernelClass::GEMM;
    // The unfused attention core's matmuls are one strided-batched cuBLAS call each: the
    // batch's tiles fill the GPU like one GEMM of the same FLOPs.
    case models::ComputeClass::BATCHED_GEMM: return hardware::KernelClass::GEMM;
    case models::ComputeClass::FUSED_ATTENTION: return hardware::KernelClass::FUSED_ATTENTION;
    case models::ComputeClass::ELEMENTWISE: return hardware::KernelClass::MEMORY;
  }
  return hardware::KernelClass::MEMORY;
}

// The group a collective of `dim` runs over, for `rank`, in ring order (parallel_layout.hpp;
// the program's PIPELINE collective is the tied-embedding group); and the symmetric set of
// such groups in the rank's stage (fast fidelity's closed form).
ParallelDim parallel_dim(Dim dim) {
  switch (dim) {
    case Dim::TENSOR: return ParallelDim::TENSOR;
    case Dim::DATA: return ParallelDim::DATA;
    case Dim::PIPELINE: return ParallelDim::PIPELINE;
  }
  return ParallelDim::TENSOR;
}

std::vector<std::uint32_t> group_ranks(const ParallelLayout& pl, Dim dim, std::uint32_t rank) {
  return dim == Dim::PIPELINE ? pl.tied_embedding_group(rank) : pl.group(parallel_dim(dim), rank);
}

std::vector<std::vector<std::uint32_t>> symmetric_groups(const ParallelLayout& pl, Dim dim, std::int64_t stage) {
  return dim == Dim::PIPELINE ? pl.tied_embedding_groups() : pl.groups(parallel_dim(dim), ParallelDim::PIPELINE, stage);
}

// Fast fidelity: a run of consecutive steps of one template run folded into one task.
struct FoldGroup {
  std::uint32_t first = 0, last = 0;
};
// What simulating a folded group alone yields (the same for every stage that runs it)…
struct FoldOutcome {
  sim::Time duration;
  Parts parts{};
  std::int64_t alloc_bytes = 0, free_bytes = 0;
  float contention_share = 1.0f;
  double tp_share = 0;
};
// … and what the group's task needs of it in one stage, whose link interference scales its
// tensor-parallel share.
struct Folded : FoldOutcome {
  float link_slowdown = 0.0f;
};

}  // namespace

namespace {

// Transformer Engine's FP8 linear layer besides its GEMMs: forward casts the input to FP8
// and records its amax (one fused kernel: read 2 B, write 1 B per element); backward casts
// the output gradient to FP8 with its transpose (read 2, write 1 + 1) and transposes the
// saved FP8 input for the weight gradient (read 1, write 1). The FP8 weight copy is made
// once per iteration and not counted here.
double fp8_cast_seconds(const models::Op& op, Cost what, const hardware::CostModel& cost) {
  const double in = static_cast<double>(op.gemm.m) * static_cast<double>(op.gemm.k);
  const double out = static_cast<double>(op.gemm.m) * static_cast<double>(op.gemm.n);
  hardware::Kernel k;
  k.cls = hardware::KernelClass::MEMORY;
  k.dtype = hardware::Dtype::BF16;
  if (what == Cost::FORWARD) {
    k.bytes = 3 * in;
    return cost.seconds(k);
  }
  double s = 0;
  if (what != Cost::BACKWARD_WEIGHT) {
    k.bytes = 4 * out;
    s += cost.seconds(k);
  }
  if (what != Cost::BACKWARD_INPUT) {
    k.bytes = 2 * in;
    s += cost.seconds(k);
  }
  return s;
}

}  // namespace

double segment_seconds(const Segment& segment, Cost what, hardware::Dtype dtype, const hardware::CostModel& cost,
                       Pricing pricing) {
  const auto price = [&](const hardware::Kernel& k) {
    return pricing == Pricing::LEAST ? cost.least_seconds(k) : cost.seconds(k);
  };
  double total = 0;
  for (const auto& op : segment.ops) {
    hardware::Kernel k;
    k.cls = kernel_class(op.cls);
    // Precision per kernel: an FP8 run (Transformer Engine) runs only the transformer's
    // linear layers in FP8; attention, the output layer and the memory-bound kernels in BF16.
    const bool fp8 = dtype == hardware::Dtype::FP8 && op.fp8_linear;
    k.dtype = dtype == hardware::Dtype::FP8 && !fp8 ? hardware::Dtype::BF16 : dtype;
    if (fp8) total += fp8_cast_seconds(op, what, cost);
    k.batch = op.gemm.batch;
    k.curve_flops = op.attention_curve_flops;
    k.causal = op.causal;
    k.dropout = op.dropout;
    const double run = op.executed_fraction;  // a causal fused attention runs half its FLOPs
    // Output rows × columns and reduction of each GEMM: forward Y = X·W is (m × n, k); the
    // input gradient dX = dY·Wᵀ is (m × k, n); the weight gradient dW = Xᵀ·dY is (k × n, m).
    // (The unfused attention's two backward matmuls are timed in the input-gradient shape.)
    const bool gemm = k.cls == hardware::KernelClass::GEMM && op.gemm.m > 0 && op.gemm.n > 0 && op.gemm.k > 0;
    auto shape = [&](std::int64_t rows, std::int64_t cols, std::int64_t depth) {
      if (!gemm) return;
      k.m = rows;
      k.n = cols;
      k.k = depth;
    };
    if (what == Cost::FORWARD) {
      shape(op.gemm.m, op.gemm.n, op.gemm.k);
      k.flops = op.fwd_flops * run;
      k.bytes = op.fwd_bytes;
      k.kernels = op.fwd_kernels;
      total += price(k);
      continue;
    }
    const bool split_kernels = op.bwd_weight_flops > 0;
    // Input- and weight-gradient GEMMs are separate kernels of the forward's size class,
    // one launch each.
    if (what != Cost::BACKWARD_WEIGHT) {
      shape(op.gemm.m, op.gemm.k, op.gemm.n);
      k.flops = (op.bwd_input_flops + op.bwd_extra_flops) * run;
      k.bytes = split_kernels ? op.bwd_bytes / 2 : op.bwd_bytes;
      k.kernels = split_kernels ? 1 : op.bwd_kernels;
      total += price(k);
    }
    if (what != Cost::BACKWARD_INPUT && split_kernels) {
      shape(op.gemm.k, op.gemm.n, op.gemm.m);
      k.flops = op.bwd_weight_flops * run;
      k.bytes = op.bwd_bytes / 2;
      k.kernels = 1;
      k.accumulate_bytes = op.wgrad_accumulate_bytes;
      total += price(k);
      if (op.wgrad_add_bytes > 0) {
        hardware::Kernel add;  // memory-bound, one launch
        add.bytes = op.wgrad_add_bytes;
        total += cost.seconds(add);
      }
    }
  }
  return total;
}

namespace {

// Folded groups recur across the variants of a sweep or search (the same layers, micro-batch
// and tensor size under another pipeline, data or schedule choice): their outcome depends only
// on what the key digests, so it is kept per thread, whichever lowering asks. The key is a
// 128-bit digest of everything the group's simulation reads, streamed as it is read: a whole
// run has thousands of items, and copying them into a string key to hash it afterwards cost
// a tenth of an evaluation. Each record of up to four words is folded by two 64×64→128-bit
// multiplies that do not wait for the digest so far (the wyhash construction), then chained
// into two lanes with different constants: a collision between the at most 2^16 kept groups
// is a chance of about 2^-96.
struct FoldKey {
  std::uint64_t a = 0x243F6A8885A308D3ull, b = 0x13198A2E03707344ull;
  std::uint64_t records = 0;
  bool operator==(const FoldKey&) const = default;
  void add(std::uint64_t w0, std::uint64_t w1 = 0, std::uint64_t w2 = 0, std::uint64_t w3 = 0) {
    ++records;
    const std::uint64_t h = mum(w0 ^ 0xA0761D6478BD642Full, w1 ^ 0xE7037ED1A0B428DBull) ^
                            mum(w2 ^ 0x8EBC6AF09C88C6E3ull, w3 ^ 0x589965CC75374CC3ull ^ records);
    a = mum(a ^ h, 0x1D8E4E27C47D124Full);
    b = std::rotl(b, 29) * 0x9FB21C651E98DF25ull + (h ^ records);
  }
  template <typename T>
  static std::uint64_t word(const T& v) {
    static_assert(sizeof(T) <= sizeof(std::uint64_t) && std::is_trivially_copyable_v<T>);
    std::uint64_t w = 0;
    std::memcpy(&w, &v, sizeof v);
    return w;
  }
  // The 128-bit product's halves folded together: every input bit reaches the middle bits.
  static std::uint64_t mum(std::uint64_t x, std::uint64_t y) {
    __extension__ using Wide = unsigned __int128;  // GCC and Clang on 64-bit targets
    const Wide r = static_cast<Wide>(x) * y;
    return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
  }
};
struct FoldKeyHash {
  std::size_t operator()(const FoldKey& k) const { return static_cast<std::size_t>(k.a ^ (k.b >> 1)); }
};

// What a fold's simulation reads of an item (its memo key's record of it): memory, price
// (duration(it), in the stage folding it), and the task's kind, stream and category. (A
// record's last word stays below 2^32; the other records of a run's key mark theirs above.)
template <class Duration>
void add_item_record(FoldKey& key, const Item& it, Duration& duration) {
  key.add(FoldKey::word(it.alloc_bytes), FoldKey::word(it.free_bytes), FoldKey::word(duration(it).ps),
          std::uint64_t{it.kind == Item::Kind::COMPUTE} | std::uint64_t{it.stream} << 8 |
              std::uint64_t{static_cast<std::uint8_t>(it.category)} << 16 |
              std::uint64_t{it.kind != Item::Kind::COMPUTE && it.collective.occupies_sms} << 24);
}

// What a lowering computes from the cluster and the parallel layout alone — the groups of
// each dimension, NCCL's view of them, their symmetric closed forms — is the same for every
// variant of a sweep or search with that layout, so it is kept per thread across lowerings.
struct LayoutMemo {
  // (dim, stage, op, algorithm, protocol)
  std::map<std::tuple<int, std::int64_t, int, int, int>, hardware::ClosedForm> closed_form;
  std::map<std::tuple<int, std::int64_t, int, double>, hardware::AlgorithmChoice> choice;  // (dim, stage, op, bytes)
  std::map<std::tuple<int, std::int64_t, int>, hardware::TuningInputs> tuning;               // (dim, stage, op)
  std::map<std::pair<std::int64_t, std::int64_t>, hardware::ClosedForm> send;               // (stage, peer)
  std::map<std::int64_t, double> interference;                                              // stage
  std::map<std::pair<int, std::int64_t>, std::vector<std::vector<std::uint32_t>>> groups;  // (dim, stage)
  std::vector<std::vector<std::uint32_t>> pipeline_groups;  // empty until first asked for
  // The simulated members of a group, which the fidelity and the layout alone decide (every
  // rank, or each stage's representative): (fidelity, dim, group).
  std::map<std::tuple<int, int, std::uint64_t>, std::uint32_t> simulated_members;
};

// The value kept under `key`, computed and kept when absent; a computation that throws
// keeps nothing (the memo outlives the lowering).
template <class Map, class Key, class Compute>
const typename Map::mapped_type& memoized(Map& map, const Key& key, Compute&& compute) {
  if (const auto pos = map.find(key); pos != map.end()) return pos->second;
  auto value = compute();
  return map.emplace(key, std::move(value)).first->second;
}

LayoutMemo& layout_memo(const hardware::Cluster& cluster, const Layout& l) {
  using Key = std::tuple<std::uint64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::string>;
  // Bounded: a sweep over more layouts than this starts again (a miss only costs time). Only
  // a new lowering clears it, never while one on this thread holds an entry.
  constexpr std::size_t MAX_LAYOUTS = 256;
  thread_local std::map<Key, std::unique_ptr<LayoutMemo>> memos;
  Key key{cluster.id(), l.tensor, l.pipeline, l.data, l.context, l.expert, l.rank_order};
  auto found = memos.find(key);
  if (found == memos.end()) {
    if (memos.size() >= MAX_LAYOUTS) memos.clear();
    found = memos.emplace(std::move(key), std::make_unique<LayoutMemo>()).first;
  }
  return *found->second;
}

class Lowering {
 public:
  Lowering(const Program& program, const hardware::Cluster& cluster, const hardware::CostModel& cost,
           Fidelity fidelity, const LowerOptions& options)
      : program_(program), cluster_(cluster), cost_(cost), fidelity_(fidelity), options_(options),
        l_(program.spec.layout), pl_(parallel_layout(program.spec.layout)), stages_(static_cast<std::int64_t>(program.roles.size())),
        memo_(layout_memo(cluster, program.spec.layout)) {}

  Lowered run();

 private:
  sim::Time segment_time(std::uint32_t segment, Cost cost, std::int64_t stage);  // the whole segment's
  [[gnu::noinline]] sim::Time price_segment(std::uint32_t segment, Cost cost, std::int64_t stage);
  sim::Time compute_time(const Item& it, std::int64_t stage);
  hardware::AlgorithmChoice choice(const CollectiveNeed& need, std::int64_t stage);
  hardware::ClosedForm symmetric(const CollectiveNeed& need, const RankCoords& c);
  hardware::ClosedForm symmetric_send(std::int64_t stage, std::int64_t peer);
  double tp_interference(std::int64_t stage);
  // Every group of a dimension in a stage (the symmetric traffic), computed once per lowering:
  // each is a scan of the whole layout, and every cache below starts from one.
  const std::vector<std::vector<std::uint32_t>>& groups_of(Dim dim, std::int64_t stage);
  const std::vector<std::vector<std::uint32_t>>& pipeline_groups();
  sim::Time closed_form(const CollectiveNeed& need, const RankCoords& c);
  std::vector<FoldGroup> fold_groups(const Role& role) const;
  const Folded& fold(const Role& role, const FoldGroup& g, const RankCoords& c);
  const Folded& fold_run(const Role& role, const Step& step, const RankCoords& c);
  bool like_previous_stage(std::int64_t stage, ItemList list, std::int32_t chunk);
  struct LocalEdge {
    std::uint32_t from, to;
    Dep::On on;
  };
  // The group of `n` items item_at(0 … n − 1), whose edges for_each_edge(visit) visits in the
  // order of the items they end at; digest(key, duration, for_each_edge) adds to its memo key
  // everything its simulation reads of them (duration(item): the item's price in this stage).
  template <class ItemAt, class ForEachEdge, class Digest>
  void simulate_fold(std::uint32_t n, ItemAt item_at, ForEachEdge for_each_edge, Digest digest, const RankCoords& c,
                     Folded& f);
  FoldOutcome simulate_fold_alone(const std::vector<const Item*>& items, const std::vector<sim::Time>& durations,
                                  const std::vector<LocalEdge>& edges) const;
  bool rank_local(const Item& it) const;
  sim::OpDescriptor describe(const Role& role, const Item& it, std::uint32_t group) const;
  double item_flops(const Role& role, const Item& it) const;
  double runtime_bytes(MemClass c) const;

  const Program& program_;
  const hardware::Cluster& cluster_;
  const hardware::CostModel& cost_;
  Fidelity fidelity_;
  LowerOptions options_;
  const Layout& l_;
  ParallelLayout pl_;
  std::int64_t stages_;
  double contention_ = 0;

  std::vector<std::vector<sim::Time>> compute_cache_;  // [stage][segment · COST_KINDS + cost]
  // The collectives this lowering uses, as NCCL's model picks them (Lowered::collectives).
  std::map<std::tuple<int, std::int64_t, int, double>, hardware::AlgorithmChoice> choice_cache_;  // (dim, stage, op, bytes)
  std::map<double, bool> p2p_bytes_;  // sizes of the pipeline's point-to-point sends
  struct CollectiveKey {
    int dim, op;
    std::int64_t stage;
    double bytes, latency_scale;
    bool operator==(const CollectiveKey&) const = default;
  };
  struct CollectiveKeyHash {
    // One multiply of the doubles' bits, the stage and the collective folded in (libstdc++'s
    // std::hash<double> is a library call per lookup: 0.7 % of a search evaluation; a table's
    // hash needs no digest's strength); ±0 are equal, so hash alike.
    std::size_t operator()(const CollectiveKey& k) const {
      const auto bits = [](double d) { return d == 0 ? 0 : FoldKey::word(d); };
      const std::uint64_t what = static_cast<std::uint64_t>(k.stage) << 16 |
                                 static_cast<std::uint64_t>(k.dim) << 8 | static_cast<std::uint64_t>(k.op);
      return static_cast<std::size_t>(FoldKey::mum(bits(k.bytes) ^ 0xA0761D6478BD642Full,
                                                   std::rotl(bits(k.latency_scale), 17) ^ what ^ 0xE7037ED1A0B428DBull));
    }
  };
  std::unordered_map<CollectiveKey, sim::Time, CollectiveKeyHash> collective_time_;
  LayoutMemo& memo_;  // what depends on the cluster and the layout only
  // A folded run or group by (stage, list, chunk, its first and last item); looked up for
  // every folded step, never iterated (an unordered map's nodes stay put, as the lowering's
  // pointers to outcomes need).
  struct FoldSlot {
    std::int64_t stage;
    int list;
    std::uint32_t chunk, first, last;
    bool operator==(const FoldSlot&) const = default;
  };
  struct FoldSlotHash {
    std::size_t operator()(const FoldSlot& k) const {
      const std::uint64_t where = static_cast<std::uint64_t>(k.stage) << 40 ^ std::uint64_t{k.chunk} << 8 ^
                                  static_cast<std::uint8_t>(k.list);
      return static_cast<std::size_t>(FoldKey::mum(where ^ 0xA0761D6478BD642Full, (std::uint64_t{k.first} << 32 | k.last) ^ 0xE7037ED1A0B428DBull));
    }
  };
  std::unordered_map<FoldSlot, Folded, FoldSlotHash> fold_cache_;
  // Pieces of runs by what their folding reads but the layer (Lowering::fold_run): the first.
  std::unordered_map<FoldKey, const Folded*, FoldKeyHash> piece_shapes_;
  // The pieces folded last, compared item by item (alike_but_layer) before a new piece's shape
  // is digested: a piece is most often alike to one a layer before it.
  struct RecentPiece {
    std::int64_t stage = -1;
    std::span<const Item> items;
    const Folded* outcome = nullptr;
  };
  std::array<RecentPiece, 8> recent_pieces_{};
  std::size_t next_recent_piece_ = 0;
  std::map<std::tuple<std::int64_t, int, std::int32_t>, bool> like_previous_;  // (stage, list, chunk)
  // Per template (list, chunk) of the stages restored from one (LowerOptions::as_built): its
  // rank-local collectives, one of each closed form (the copies hold the same ones).
  std::map<std::pair<int, std::int32_t>, std::vector<CollectiveNeed>> restored_collectives_;
};

// Device memory every GPU of the run holds besides tensors, from the cost profile: the CUDA
// context, the GEMM stream's cuBLAS workspace, and NCCL's buffers for each communicator
// the run uses (tensor, data, the pipeline's point-to-point, the tied-embedding group).
double Lowering::runtime_bytes(MemClass c) const {
  const auto& p = cost_.profile();
  switch (c) {
    case MemClass::CUDA_CONTEXT: return p.cuda_context_bytes().value();
    case MemClass::CUBLAS_WORKSPACE: return p.cublas_workspace_bytes().value();
    case MemClass::COMM_BUFFERS: return comm_buffer_bytes(l_, program_.spec.model, p);
    default: return 0;
  }
}

// Per stage, per segment and cost; a negative time marks one not computed yet. The lookup is
// inline (every folded item's time is one); pricing is not.
inline sim::Time Lowering::segment_time(std::uint32_t segment, Cost cost, std::int64_t stage) {
  const std::size_t slot = std::size_t{segment} * COST_KINDS + static_cast<std::size_t>(cost);
  if (static_cast<std::size_t>(stage) < compute_cache_.size()) {
    const auto& of_stage = compute_cache_[static_cast<std::size_t>(stage)];
    if (slot < of_stage.size() && of_stage[slot].ps >= 0) return of_stage[slot];
  }
  return price_segment(segment, cost, stage);
}

sim::Time Lowering::price_segment(std::uint32_t segment, Cost cost, std::int64_t stage) {
  if (compute_cache_.empty()) compute_cache_.resize(static_cast<std::size_t>(stages_));
  auto& of_stage = compute_cache_[static_cast<std::size_t>(stage)];
  const std::size_t slot = std::size_t{segment} * COST_KINDS + static_cast<std::size_t>(cost);
  if (of_stage.size() <= slot) of_stage.resize(slot + COST_KINDS, sim::Time{-1});
  const Segment& seg = program_.roles[static_cast<std::size_t>(stage)].segments[segment];
  of_stage[slot] = sim::Time::from_seconds(segment_seconds(seg, cost, program_.spec.dtype, cost_));
  return of_stage[slot];
}

sim::Time Lowering::compute_time(const Item& it, std::int64_t stage) {
  const sim::Time t = segment_time(it.segment, it.cost, stage);
  if (it.fraction == 1.0) return t;
  return sim::Time::from_seconds(t.seconds() * it.fraction);
}

// The algorithm and protocol NCCL's tuning model picks for the collective; a collective cut
// into pipelined pieces (latency_scale 1/k) is chosen for its whole buffer, as one call.
// Every group of a dimension in a stage has the same shape, so the first stands for all.
hardware::AlgorithmChoice Lowering::choice(const CollectiveNeed& need, std::int64_t stage) {
  const double whole = need.latency_scale > 0 ? need.bytes / need.latency_scale : need.bytes;
  const std::tuple<int, std::int64_t, int, double> key{static_cast<int>(need.dim), stage, static_cast<int>(need.op), whole};
  if (const auto pos = choice_cache_.find(key); pos != choice_cache_.end()) return pos->second;
  // What NCCL's model sees of the group does not depend on the size: found once per
  // (dimension, stage, collective), then each size only picks.
  const hardware::AlgorithmChoice& ch = memoized(memo_.choice, key, [&] {
    hardware::TuningInputs sized =
        memoized(memo_.tuning, std::tuple<int, std::int64_t, int>{static_cast<int>(need.dim), stage, static_cast<int>(need.op)},
                 [&] { return hardware::tuning_inputs(cluster_, need.op, groups_of(need.dim, stage)[0], 0); });
    sized.bytes = whole;
    return hardware::nccl_choose(sized);
  });
  return choice_cache_.emplace(key, ch).first->second;
}

hardware::ClosedForm Lowering::symmetric(const CollectiveNeed& need, const RankCoords& c) {
  const hardware::AlgorithmChoice ch = choice(need, c.stage);
  return memoized(memo_.closed_form,
                  std::tuple<int, std::int64_t, int, int, int>{static_cast<int>(need.dim), c.stage, static_cast<int>(need.op),
                                                              static_cast<int>(ch.algorithm), static_cast<int>(ch.protocol)},
                  [&] { return hardware::symmetric_closed_form(cluster_, need.op, groups_of(need.dim, c.stage), ch); });
}

hardware::ClosedForm Lowering::symmetric_send(std::int64_t stage, std::int64_t peer) {
  return memoized(memo_.send, std::pair<std::int64_t, std::int64_t>{stage, peer}, [&] {
    // Every pair of ranks across this stage boundary sends at once.
    std::vector<std::vector<std::uint32_t>> pairs;
    for (const auto& g : pipeline_groups())
      pairs.push_back({g[static_cast<std::size_t>(stage)], g[static_cast<std::size_t>(peer)]});
    return hardware::symmetric_closed_form(cluster_, hardware::Collective::SEND_RECV, pairs);
  });
}

// How much slower the stage's tensor-parallel collectives move data while its data-parallel
// collectives share their links (both as their whole symmetric traffic).
double Lowering::tp_interference(std::int64_t stage) {
  return memoized(memo_.interference, stage, [&] {
    if (l_.tensor <= 1 || l_.data <= 1) return 0.0;
    // Estimated with both as rings: which links they share, not the bytes, matters here.
    const hardware::AlgorithmChoice ring{hardware::Algorithm::RING, hardware::Protocol::SIMPLE, 1, 0.0};
    return hardware::interference_slowdown(cluster_, hardware::Collective::ALL_REDUCE, groups_of(Dim::TENSOR, stage), ring,
                                           hardware::Collective::ALL_REDUCE, groups_of(Dim::DATA, stage), ring);
  });
}

const std::vector<std::vector<std::uint32_t>>& Lowering::groups_of(Dim dim, std::int64_t stage) {
  return memoized(memo_.groups, std::pair<int, std::int64_t>{static_cast<int>(dim), stage},
                  [&] { return symmetric_groups(pl_, dim, stage); });
}

const std::vector<std::vector<std::uint32_t>>& Lowering::pipeline_groups() {
  if (memo_.pipeline_groups.empty()) memo_.pipeline_groups = pl_.groups(ParallelDim::PIPELINE);
  return memo_.pipeline_groups;
}

sim::Time Lowering::closed_form(const CollectiveNeed& need, const RankCoords& c) {
  // A template repeats its collectives layer after layer: each distinct one is priced once.
  const CollectiveKey key{static_cast<int>(need.dim), static_cast<int>(need.op), c.stage, need.bytes, need.latency_scale};
  if (const auto pos = collective_time_.find(key); pos != collective_time_.end()) return pos->second;
  const sim::Time t = sim::Time::from_seconds(symmetric(need, c).seconds(need.bytes, need.latency_scale));
  collective_time_.emplace(key, t);
  return t;
}

// Which steps fast fidelity folds together: consecutive steps of one template run that do
// rank-local work (compute, and tensor-parallel collectives, whose group members are the
// identical ranks fast fidelity does not simulate), such that inside a group only the first
// step waits for anything outside it, and only the last is waited for from outside (a
// prefetch may wait for the first to start).
// Work fast fidelity may fold: computation, and tensor-parallel collectives (their group is
// the identical ranks fast fidelity does not simulate), on the GPU's own memory.
bool Lowering::rank_local(const Item& it) const {
  if (it.host_memory || (it.mem_class != MemClass::ACTIVATIONS && (it.alloc_bytes != 0 || it.free_bytes != 0)))
    return false;
  return it.kind == Item::Kind::COMPUTE || (it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::TENSOR);
}

std::vector<FoldGroup> Lowering::fold_groups(const Role& role) const {
  const auto& steps = role.steps;
  const auto n = static_cast<std::uint32_t>(steps.size());
  auto local = [&](const Step& st) {
    // A whole run or a piece of one folds on its own (Lowering::fold_run).
    if (st.kind != Step::Kind::ITEM || st.micro_batch < 0 || st.count > 1) return false;
    return rank_local(role.item(st));
  };
  auto same_run = [&](const Step& a, const Step& b) {
    return a.micro_batch == b.micro_batch && a.direction == b.direction && a.chunk == b.chunk && a.list == b.list;
  };
  // Candidate ranges, then cut where a rule is broken until none is.
  std::vector<FoldGroup> todo, out;
  for (std::uint32_t s = 0; s < n;) {
    if (!local(steps[s])) {
      ++s;
      continue;
    }
    std::uint32_t e = s;
    while (e + 1 < n && local(steps[e + 1]) && same_run(steps[s], steps[e + 1])) ++e;
    todo.push_back({s, e});
    s = e + 1;
  }
  if (todo.empty()) return {};  // most roles: every run whole or in pieces
  // Who refers to each step (CSR).
  std::vector<std::uint32_t> ref_offset(n + 1, 0);
  for (const Step& st : steps)
    for (const StepDep& d : role.deps(st)) ++ref_offset[d.step + 1];
  for (std::uint32_t i = 0; i < n; ++i) ref_offset[i + 1] += ref_offset[i];
  std::vector<StepDep> refs(ref_offset[n]);
  {
    std::vector<std::uint32_t> fill(ref_offset.begin(), ref_offset.end() - 1);
    for (std::uint32_t s = 0; s < n; ++s)
      for (const StepDep& d : role.deps(steps[s])) refs[fill[d.step]++] = {s, d.on};
  }
  while (!todo.empty()) {
    const FoldGroup g = todo.back();
    todo.pop_back();
    bool cut = false;
    for (std::uint32_t k = g.first; k <= g.last && !cut; ++k) {
      if (k > g.first) {
        for (const StepDep& d : role.deps(steps[k]))
          if (d.step < g.first || d.step > g.last) {  // waits for something outside: starts a group
            todo.push_back({g.first, k - 1});
            todo.push_back({k, g.last});
            cut = true;
            break;
          }
      }
      if (cut || k == g.last) continue;
      for (std::uint32_t i = ref_offset[k]; i < ref_offset[k + 1]; ++i) {
        const StepDep& r = refs[i];
        const bool inside = r.step >= g.first && r.step <= g.last;
        if (!inside && !(k == g.first && r.on == Dep::On::START)) {  // waited for from outside: ends a group
          todo.push_back({g.first, k});
          todo.push_back({k + 1, g.last});
          cut = true;
          break;
        }
      }
    }
    if (!cut) out.push_back(g);
  }
  std::sort(out.begin(), out.end(), [](const FoldGroup& a, const FoldGroup& b) { return a.first < b.first; });
  return out;
}

// Simulates one folded group alone, on one GPU with its streams, by the engine's own rules
// (contention included), and keeps what the group's task needs: its length, what each
// category contributed, its memory high-water mark and net change, and the share of it that
// computes with no communication of its own beside it (what contention from outside slows).
const Folded& Lowering::fold(const Role& role, const FoldGroup& g, const RankCoords& c) {
  const Step& head = role.steps[g.first];
  const FoldSlot key{c.stage, static_cast<int>(head.list), static_cast<std::uint32_t>(head.chunk), head.index,
                     role.steps[g.last].index};
  auto [pos, fresh] = fold_cache_.try_emplace(key);
  if (!fresh) return pos->second;
  simulate_fold(
      g.last - g.first + 1, [&](std::uint32_t k) -> const Item& { return role.item(role.steps[g.first + k]); },
      [&](auto&& visit) {
        for (std::uint32_t k = g.first; k <= g.last; ++k)
          for (const StepDep& d : role.deps(role.steps[k]))
            if (d.step >= g.first && d.step <= g.last) visit(LocalEdge{d.step - g.first, k - g.first, d.on});
      },
      [&](FoldKey& digest, auto& duration, auto& for_each_edge) {
        for (std::uint32_t k = g.first; k <= g.last; ++k) add_item_record(digest, role.item(role.steps[k]), duration);
        for_each_edge([&](const LocalEdge& e) {
          digest.add(std::uint64_t{e.from} | std::uint64_t{e.to} << 32, static_cast<std::uint64_t>(e.on), 1);
        });
      },
      c, pos->second);
  return pos->second;
}

namespace {

// The waits of item `j` within its piece that fold_run's shape reads: PREVIOUS ones that stay
// inside the piece.
bool inside_previous(const Dep& d, std::uint32_t j) {
  return d.target == Dep::Target::PREVIOUS && static_cast<std::uint32_t>(d.offset) <= j;
}

// A whole run's memo key (Lowering::fold_run): its items in order, each with its waits inside
// the run. A chunk repeats its layers, and what the fold reads of a layer's items is most
// often what it read of a layer before (all but the layer): a block of one layer's items
// alike to one of the last few kinds of block met (recompute in segments makes a segment's
// first layer unlike the others) is recorded as a repetition of that kind rather than
// digested again. Only a block whose waits all stay inside the run becomes a kind: a
// repetition then stands for the same items with the same waits, so the key is still a
// function of what the fold reads and tells apart any two runs that differ in it.
template <class Duration>
void add_run_records(FoldKey& key, std::span<const Item> run, Duration& duration) {
  constexpr std::uint64_t WAIT = std::uint64_t{1} << 32, REPEATS = std::uint64_t{2} << 32;  // record kinds
  key.add(0, 0, 0, REPEATS | WAIT);  // a run's key, never a group's
  struct Kind {
    std::size_t begin = 0, size = 0;
  };
  LayerKinds<Kind> kinds;
  const Kind* repeating = nullptr;  // the kind the blocks since the last record repeat
  std::uint64_t repeats = 0;
  auto record_repeats = [&] {
    if (repeats > 0) key.add(kinds.slot(repeating), repeating->size, repeats, REPEATS);
    repeats = 0;
  };
  for (std::size_t i = 0; i < run.size();) {
    const std::size_t end = layer_block_end(run, i);
    if (const Kind* kind = kinds.find(run, i, end - i); kind != nullptr) {
      if (kind != repeating) record_repeats();
      repeating = kind;
      ++repeats;
    } else {
      record_repeats();
      repeating = nullptr;
      bool inside = true;  // every wait of the block stays inside the run
      for (std::size_t j = i; j < end; ++j) {
        add_item_record(key, run[j], duration);
        for (const Dep& d : run[j].deps) {
          if (d.target != Dep::Target::PREVIOUS) continue;
          if (static_cast<std::size_t>(d.offset) > j) inside = false;
          else key.add(static_cast<std::uint64_t>(d.offset), static_cast<std::uint64_t>(d.on), 0, WAIT);
        }
      }
      if (inside) kinds.keep({i, end - i});
    }
    i = end;
  }
  record_repeats();
}

}  // namespace

// A whole template run (Step::whole_run) or a piece of one (Step::count): its items wait for
// each other as the template says. The same items folded step by step have the same key and
// the same result.
const Folded& Lowering::fold_run(const Role& role, const Step& step, const RankCoords& c) {
  const FoldSlot key{c.stage, static_cast<int>(step.list), static_cast<std::uint32_t>(step.chunk), step.index,
                     step.index + step.count - 1};
  auto [pos, fresh] = fold_cache_.try_emplace(key);
  if (!fresh) return pos->second;
  // The middle stages of a pipeline mostly run what the stage before them runs, at its prices:
  // the same part of its template folds the same (its link interference is the stage's own).
  if (c.stage > 0 && like_previous_stage(c.stage, step.list, step.chunk)) {
    FoldSlot previous = key;
    --previous.stage;
    const auto before = fold_cache_.find(previous);
    if (before != fold_cache_.end()) {
      static_cast<FoldOutcome&>(pos->second) = before->second;
      pos->second.link_slowdown = static_cast<float>(before->second.tp_share * tp_interference(c.stage));
      return pos->second;
    }
  }
  const auto run = role.items(step);
  if (!step.whole_run) {
    for (const RecentPiece& r : recent_pieces_)
      if (r.stage == c.stage && alike_but_layer(r.items, run)) {
        pos->second = *r.outcome;
        return pos->second;
      }
    recent_pieces_[next_recent_piece_++ % recent_pieces_.size()] = {c.stage, run, &pos->second};
    // The pieces of a first forward or a last backward, one or a few per layer, differ mostly
    // in the layer they run, which the folding does not read: in one stage an item's time
    // follows from its segment, cost and share, or its collective. A piece alike in all that
    // (and in memory, streams, categories and waits) to one already folded folds the same.
    FoldKey shape;
    shape.add(static_cast<std::uint64_t>(c.stage));
    for (std::uint32_t j = 0; j < run.size(); ++j) {
      const Item& it = run[j];
      shape.add(FoldKey::word(it.alloc_bytes), FoldKey::word(it.free_bytes), FoldKey::word(it.fraction),
                std::uint64_t{it.segment} | std::uint64_t{static_cast<std::uint8_t>(it.cost)} << 32 |
                    std::uint64_t{static_cast<std::uint8_t>(it.kind)} << 40 | std::uint64_t{it.stream} << 48 |
                    std::uint64_t{static_cast<std::uint8_t>(it.category)} << 56);
      if (it.kind != Item::Kind::COMPUTE)
        shape.add(FoldKey::word(it.collective.bytes), FoldKey::word(it.collective.latency_scale),
                  std::uint64_t{static_cast<std::uint8_t>(it.collective.dim)} |
                      std::uint64_t{static_cast<std::uint8_t>(it.collective.op)} << 8 |
                      std::uint64_t{it.collective.occupies_sms} << 16);
      for (const Dep& d : it.deps)
        if (inside_previous(d, j)) shape.add(static_cast<std::uint64_t>(d.offset), static_cast<std::uint64_t>(d.on), 2);
    }
    const auto [same, first] = piece_shapes_.try_emplace(shape, &pos->second);
    if (!first) {
      pos->second = *same->second;
      return pos->second;
    }
  }
  // Read in place: the run's items are consecutive, its waits within it are their own.
  simulate_fold(
      static_cast<std::uint32_t>(run.size()), [&](std::uint32_t j) -> const Item& { return run[j]; },
      [&](auto&& visit) {
        for (std::uint32_t j = 0; j < run.size(); ++j)
          for (const Dep& d : run[j].deps)
            if (d.target == Dep::Target::PREVIOUS && static_cast<std::uint32_t>(d.offset) <= j)
              visit(LocalEdge{j - static_cast<std::uint32_t>(d.offset), j, d.on});
      },
      [&](FoldKey& digest, auto& duration, auto& /*for_each_edge*/) { add_run_records(digest, run, duration); }, c,
      pos->second);
  return pos->second;
}

namespace {

// Whether two collectives have the same closed form in one stage: it reads these fields only
// (Lowering::CollectiveKey holds them with the stage).
bool same_closed_form(const CollectiveNeed& a, const CollectiveNeed& b) {
  return a.dim == b.dim && a.op == b.op && a.bytes == b.bytes && a.latency_scale == b.latency_scale;
}

}  // namespace

// Whether a template of `stage` folds as the same template of the stage before it: item for
// item the same in all that Lowering::simulate_fold and rank_local read — kind, stream,
// category, memory, the waits within the run — at the same prices (compute times and
// collectives' closed forms in each stage). Found once per template and stage.
bool Lowering::like_previous_stage(std::int64_t stage, ItemList list, std::int32_t chunk) {
  auto [pos, fresh] = like_previous_.try_emplace({stage, static_cast<int>(list), chunk}, false);
  if (!fresh) return pos->second;
  const Role& role = program_.roles[static_cast<std::size_t>(stage)];
  const Role& before = program_.roles[static_cast<std::size_t>(stage - 1)];
  if (static_cast<std::size_t>(chunk) >= before.chunks.size() || static_cast<std::size_t>(chunk) >= role.chunks.size())
    return false;
  const std::vector<Item>& a = role.list(list, chunk);
  const std::vector<Item>& b = before.list(list, chunk);
  if (a.size() != b.size()) return false;
  RankCoords here, there;
  here.stage = stage;
  there.stage = stage - 1;
  // The few distinct collectives found priced alike.
  std::vector<const CollectiveNeed*> priced;
  // Whether a rank-local collective costs the same in both stages (a stage's tensor-parallel
  // group may sit on other links): each distinct one priced once.
  // (Inlined: called for every rank-local collective of a template, a call costs 0.6 % of a
  // search evaluation.)
  auto collective_alike = [&](const CollectiveNeed& n, const CollectiveNeed& m) __attribute__((always_inline)) {
    const bool known =
        std::any_of(priced.begin(), priced.end(), [&](const CollectiveNeed* p) { return same_closed_form(n, *p); });
    if (known) return true;
    if (closed_form(n, here) != closed_form(m, there)) return false;
    priced.push_back(&n);
    return true;
  };
  if (options_.as_built && role.restored_from != 0 && role.restored_from == before.restored_from) {
    // Copies of one stage as build_program made them: alike item for item, segments included
    // (copy_for_stage), so only the prices of their collectives are left to compare, each
    // distinct one once (found once for all the copies).
    auto [known, unseen] = restored_collectives_.try_emplace({static_cast<int>(list), chunk});
    if (unseen)
      for (const Item& x : a)
        if (x.kind == Item::Kind::COLLECTIVE && rank_local(x) &&
            std::none_of(known->second.begin(), known->second.end(),
                         [&](const CollectiveNeed& p) { return same_closed_form(x.collective, p); }))
          known->second.push_back(x.collective);
    for (const CollectiveNeed& n : known->second)
      if (closed_form(n, here) != closed_form(n, there)) return false;
    pos->second = true;
    return true;
  }
  // Segment costs found priced alike, by segment · COST_KINDS + cost (a segment is the same
  // index in both stages, as checked below).
  std::vector<std::int8_t> segment_alike(std::max(role.segments.size(), before.segments.size()) * COST_KINDS, -1);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Item& x = a[i];
    const Item& y = b[i];
    if (x.kind != y.kind || x.stream != y.stream || x.category != y.category || x.mem_class != y.mem_class ||
        x.host_memory != y.host_memory || x.alloc_bytes != y.alloc_bytes || x.free_bytes != y.free_bytes ||
        x.deps.size() != y.deps.size())
      return false;
    for (std::size_t d = 0; d < x.deps.size(); ++d) {
      const Dep& u = x.deps.begin()[d];
      const Dep& v = y.deps.begin()[d];
      if (u.target != v.target || u.on != v.on || u.offset != v.offset) return false;
    }
    if (x.kind == Item::Kind::COMPUTE) {
      if (x.segment != y.segment || x.cost != y.cost || x.fraction != y.fraction) return false;
      std::int8_t& alike = segment_alike[std::size_t{x.segment} * COST_KINDS + static_cast<std::size_t>(x.cost)];
      // The same ops price the same (segment_seconds reads nothing else of the stage): a
      // restored middle stage's copies need not be priced to be found alike.
      if (alike < 0)
        alike = role.segments[x.segment].ops == before.segments[y.segment].ops ||
                segment_time(x.segment, x.cost, stage) == segment_time(y.segment, y.cost, stage - 1);
      if (alike == 0) return false;
      continue;
    }
    const CollectiveNeed& n = x.collective;
    const CollectiveNeed& m = y.collective;
    if (!same_closed_form(n, m) || n.occupies_sms != m.occupies_sms || x.copy.way != y.copy.way ||
        x.copy.bytes != y.copy.bytes)
      return false;
    if (x.kind != Item::Kind::COLLECTIVE || !rank_local(x)) continue;  // only the rank-local fold
    if (!collective_alike(n, m)) return false;
  }
  pos->second = true;
  return true;
}

namespace {

class FoldMemo {
 public:
  const FoldOutcome* find(const FoldKey& key) const {
    const auto it = outcomes_.find(key);
    return it == outcomes_.end() ? nullptr : &it->second;
  }
  void keep(const FoldKey& key, const FoldOutcome& o) {
    if (outcomes_.size() >= MAX_ENTRIES) outcomes_.clear();  // bounded memory; a miss only costs time
    outcomes_.emplace(key, o);
  }

 private:
  static constexpr std::size_t MAX_ENTRIES = 1 << 16;
  std::unordered_map<FoldKey, FoldOutcome, FoldKeyHash> outcomes_;
};

}  // namespace

template <class ItemAt, class ForEachEdge, class Digest>
void Lowering::simulate_fold(std::uint32_t n, ItemAt item_at, ForEachEdge for_each_edge, Digest digest,
                             const RankCoords& c, Folded& f) {
  const auto streams = static_cast<std::uint32_t>(program_.streams.size());
  // Everything the group's simulation reads: the compute slowdown beside communication, then
  // (digest) item by item kind, stream, category, memory and duration, and its edges. (The
  // durations are kept only when the memo has not seen the group: most lowerings find it
  // there.)
  FoldKey key;
  key.add(streams, FoldKey::word(contention_));
  // A group alternates its GEMM pieces with a few collectives repeated layer after layer (a
  // ring exchange's transfers, a pipelined reduce-scatter's pieces, a bulk all-gather): the
  // few priced last are checked before the lowering's table.
  struct Priced {
    const CollectiveNeed* need = nullptr;
    sim::Time time;
  };
  std::array<Priced, 4> recent{};
  std::size_t next_recent = 0;
  auto price = [&](const CollectiveNeed& need) {
    for (const Priced& p : recent)
      if (p.need != nullptr && same_closed_form(need, *p.need)) return p.time;
    const sim::Time t = closed_form(need, c);
    recent[next_recent++ % recent.size()] = {&need, t};
    return t;
  };
  // The stage's row of segment prices, held here for the many items of the group (pricing a
  // missing segment may grow it, so it is found again after a miss).
  const sim::Time* prices = nullptr;
  std::size_t priced = 0;
  auto find_prices = [&] {
    if (static_cast<std::size_t>(c.stage) >= compute_cache_.size()) return;
    const std::vector<sim::Time>& row = compute_cache_[static_cast<std::size_t>(c.stage)];
    prices = row.data();
    priced = row.size();
  };
  find_prices();
  auto duration = [&](const Item& it) {
    if (it.kind != Item::Kind::COMPUTE) return price(it.collective);
    const std::size_t slot = std::size_t{it.segment} * COST_KINDS + static_cast<std::size_t>(it.cost);
    if (slot >= priced || prices[slot].ps < 0) {
      const sim::Time t = compute_time(it, c.stage);
      find_prices();
      return t;
    }
    // compute_time's scaling, repeated: as one helper for both it moved GCC's inlining of
    // the fold (+1.3 % instructions).
    if (it.fraction == 1.0) return prices[slot];
    return sim::Time::from_seconds(prices[slot].seconds() * it.fraction);
  };
  digest(key, duration, for_each_edge);
  thread_local FoldMemo memo;
  const FoldOutcome* known = memo.find(key);
  FoldOutcome o;
  if (known != nullptr) {
    o = *known;
  } else {
    std::vector<const Item*> items(n);
    std::vector<sim::Time> durations(n);
    for (std::uint32_t k = 0; k < n; ++k) {
      items[k] = &item_at(k);
      durations[k] = duration(*items[k]);
    }
    std::vector<LocalEdge> edges;
    for_each_edge([&](const LocalEdge& e) { edges.push_back(e); });
    o = simulate_fold_alone(items, durations, edges);
    memo.keep(key, o);
  }
  static_cast<FoldOutcome&>(f) = o;
  // The time the group spends on its tensor-parallel transfers stretches as they do when
  // data-parallel traffic shares their links.
  f.link_slowdown = static_cast<float>(o.tp_share * tp_interference(c.stage));
}

FoldOutcome Lowering::simulate_fold_alone(const std::vector<const Item*>& items, const std::vector<sim::Time>& durations,
                                          const std::vector<LocalEdge>& edges) const {
  const auto n = static_cast<std::uint32_t>(items.size());
  const auto streams = static_cast<std::uint32_t>(program_.streams.size());
  sim::PlanBuilder b(1, streams, {}, {"activations"});
  for (std::uint32_t k = 0; k < n; ++k) {
    const Item& it = *items[k];
    sim::PlanBuilder::TaskSpec ts;
    ts.stream = it.stream;
    ts.category = static_cast<std::uint8_t>(it.category);
    ts.mem_class = 0;
    ts.alloc_bytes = it.alloc_bytes;
    ts.free_bytes = it.free_bytes;
    if (it.kind == Item::Kind::COMPUTE) {
      b.add_compute(ts, durations[k]);
    } else {
      sim::CommInstance inst;
      inst.participants = 1;
      inst.fixed_duration = durations[k];
      inst.occupies_sms = it.collective.occupies_sms;
      b.add_comm_task(ts, b.add_comm(inst));
    }
  }
  for (const LocalEdge& e : edges) {
    if (e.on == Dep::On::END) b.add_edge(e.from, e.to);
    else b.add_start_edge(e.from, e.to);
  }
  sim::Plan plan = std::move(b).finish();
  plan.contention_slowdown = contention_;
  plan.contended_stream = COMPUTE_STREAM;
  sim::SimulateOptions options;
  options.plan_from_builder = true;
  const sim::Timeline tl = sim::simulate(plan, sim::NetworkSpec{}, options);
  FoldOutcome f;
  f.duration = tl.makespan;
  // Busy time of the compute stream by category; its idle time waits for the group's
  // tensor-parallel transfers.
  sim::Time busy;
  for (std::uint32_t k = 0; k < n; ++k) {
    const sim::Time span = tl.end[k] - tl.start[k];
    if (plan.stream[k] == COMPUTE_STREAM) {
      f.parts[plan.category[k]] += span;
      busy += span;
    }
  }
  f.parts[static_cast<int>(Category::TP_COMM)] += tl.makespan - busy;
  // Time computing with no communication of the group beside it.
  std::vector<std::tuple<sim::Time, int, int>> ev;  // (time, kind 0 compute / 1 comm, ±1)
  for (std::uint32_t k = 0; k < n; ++k) {
    const bool computing = plan.kind[k] == sim::TaskKind::COMPUTE && plan.stream[k] == COMPUTE_STREAM;
    const bool communicating = plan.kind[k] == sim::TaskKind::COMM && plan.stream[k] != COMPUTE_STREAM;
    if (!computing && !communicating) continue;
    ev.emplace_back(tl.start[k], computing ? 0 : 1, +1);
    ev.emplace_back(tl.end[k], computing ? 0 : 1, -1);
  }
  std::sort(ev.begin(), ev.end());
  int computing = 0, communicating = 0;
  sim::Time prev, alone;
  for (const auto& [t, kind, delta] : ev) {
    if (computing > 0 && communicating == 0) alone += t - prev;
    prev = t;
    (kind == 0 ? computing : communicating) += delta;
  }
  const double total = static_cast<double>(tl.makespan.ps);
  f.contention_share = total > 0 ? static_cast<float>(static_cast<double>(alone.ps) / total) : 0.0f;
  f.tp_share = total > 0 ? static_cast<double>(f.parts[static_cast<int>(Category::TP_COMM)].ps) / total : 0.0;
  // Memory: what the group holds at its high-water mark (booked at its start) and what it
  // leaves behind (the rest freed at its end).
  std::int64_t net = 0;
  for (std::uint32_t k = 0; k < n; ++k) net += plan.alloc_bytes[k] - plan.free_bytes[k];
  f.alloc_bytes = tl.memory[0].peak_bytes;
  f.free_bytes = f.alloc_bytes - net;
  return f;
}

// Model FLOPs of a compute item's kernels (what it pays of its segment's ops).
double Lowering::item_flops(const Role& role, const Item& it) const {
  double flops = 0;
  for (const auto& op : role.segments[it.segment].ops) {
    switch (it.cost) {
      case Cost::FORWARD: flops += op.fwd_flops; break;
      case Cost::BACKWARD: flops += op.bwd_input_flops + op.bwd_extra_flops + op.bwd_weight_flops; break;
      case Cost::BACKWARD_INPUT: flops += op.bwd_input_flops + op.bwd_extra_flops; break;
      case Cost::BACKWARD_WEIGHT: flops += op.bwd_weight_flops; break;
    }
  }
  return flops * it.fraction;
}

sim::OpDescriptor Lowering::describe(const Role& role, const Item& it, std::uint32_t group) const {
  sim::OpDescriptor d;
  d.dtype = hardware::to_string(program_.spec.dtype);
  switch (it.kind) {
    case Item::Kind::COMPUTE: {
      d.kind = sim::OpDescriptor::Kind::COMPUTE;
      const Segment& seg = role.segments[it.segment];
      d.name = segment_name(program_, role, it);
      d.flops = item_flops(role, it);
      for (const auto& op : seg.ops) d.bytes += (it.cost == Cost::FORWARD ? op.fwd_bytes : op.bwd_bytes) * it.fraction;
      break;
    }
    case Item::Kind::COLLECTIVE:
      d.kind = it.collective.op == hardware::Collective::SEND_RECV ? sim::OpDescriptor::Kind::SEND_RECV
                                                                   : sim::OpDescriptor::Kind::COLLECTIVE;
      d.name = hardware::to_string(it.collective.op);
      d.bytes = it.collective.bytes;
      d.group = group;
      break;
    case Item::Kind::COPY:
      d.kind = sim::OpDescriptor::Kind::COPY;
      d.name = it.copy.way == CopyNeed::Way::DEVICE_TO_HOST ? "copy-d2h" : "copy-h2d";
      d.bytes = it.copy.bytes;
      break;
  }
  return d;
}

Lowered Lowering::run() {
  const Layout& l = l_;
  if (l.tensor != program_.applied.tensor || l.data != program_.applied.data || stages_ != l.pipeline)
    throw std::invalid_argument("lower: the program's passes did not apply the layout " + std::to_string(l.tensor) +
                                "×" + std::to_string(l.pipeline) + "×" + std::to_string(l.data));
  if (static_cast<std::uint64_t>(l.gpus()) != cluster_.num_gpus())
    throw std::invalid_argument("lower: layout needs " + std::to_string(l.gpus()) + " GPUs, cluster has " +
                                std::to_string(cluster_.num_gpus()));
  contention_ = cost_.profile().comm_overlap_slowdown().value();

  Lowered out;
  out.fidelity = fidelity_;
  std::vector<std::uint32_t> device_of_rank(static_cast<std::size_t>(l.gpus()), sim::NONE);
  auto add_device = [&](std::uint32_t r, std::int64_t stage) {
    device_of_rank[r] = static_cast<std::uint32_t>(out.device_rank.size());
    out.device_rank.push_back(r);
    out.device_stage.push_back(static_cast<std::int32_t>(stage));
  };
  if (fidelity_ == Fidelity::FULL) {
    for (std::uint32_t r = 0; r < static_cast<std::uint32_t>(l.gpus()); ++r) add_device(r, pl_.coords(r).stage);
  } else {
    // The representatives, found without visiting every rank: each stage's rank whose other
    // coordinates are 0 (ParallelLayout::is_representative), in rank order as stages are.
    for (std::int64_t stage = 0; stage < l.pipeline; ++stage) {
      RankCoords c;
      c.stage = stage;
      add_device(pl_.rank(c), stage);
    }
  }
  const auto num_devices = static_cast<std::uint32_t>(out.device_rank.size());

  std::vector<std::string> categories, mem_classes;
  for (int c = 0; c < static_cast<int>(Category::COUNT); ++c) categories.emplace_back(to_string(static_cast<Category>(c)));
  for (int c = 0; c < static_cast<int>(MemClass::COUNT); ++c) mem_classes.emplace_back(to_string(static_cast<MemClass>(c)));
  sim::PlanBuilder b(num_devices, static_cast<std::uint32_t>(program_.streams.size()), categories, mem_classes);
  b.set_stream_names(program_.streams);
  {
    // Fast fidelity: at most a task per step of one rank per stage; full: a task per item of
    // every rank (what plan_size estimates).
    std::size_t tasks = 0;
    for (const Role& role : program_.roles)
      tasks += fidelity_ == Fidelity::FAST ? role.steps.size()
                                           : role.item_steps() * static_cast<std::size_t>(l.tensor * l.data);
    b.reserve(tasks, fidelity_ == Fidelity::FAST ? tasks : tasks / 4);
    // A folded task's parts, as many as fast fidelity's tasks at most (grown part by part,
    // their copies were 1 % of a search evaluation's time).
    if (fidelity_ == Fidelity::FAST) out.parts.reserve(tasks);
  }
  {
    // One host per node; a device's host memory is its node's.
    std::vector<std::uint32_t> host_of_device;
    std::map<std::uint32_t, std::uint32_t> host_of_node;
    for (const std::uint32_t r : out.device_rank) {
      const auto [pos, fresh] = host_of_node.try_emplace(cluster_.node_of(r), static_cast<std::uint32_t>(host_of_node.size()));
      host_of_device.push_back(pos->second);
    }
    b.set_hosts(static_cast<std::uint32_t>(host_of_node.size()), std::move(host_of_device));
  }

  std::map<std::tuple<int, std::uint64_t, int, int, int>, std::uint32_t> pattern_cache;  // (dim, group, op, algorithm, protocol)
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> p2p_cache;   // (src, dst)
  std::map<std::pair<std::uint32_t, bool>, std::uint32_t> copy_cache;           // (rank, to host)
  std::unordered_map<std::uint64_t, std::uint32_t> instances[3];                 // per dim: (group, seq)
  auto instance_key = [](std::uint64_t group, std::uint64_t seq) { return (group << 32) | seq; };

  const auto m = static_cast<std::size_t>(program_.micro_batches);
  const auto v = static_cast<std::size_t>(program_.applied.virtual_stages);
  // Per device and step: the task that takes the step's dependencies (its first) and the one
  // waited for at its end (its last); they differ only for a run or a piece of one lowered
  // item by item. (Left unfilled: every step's are set as it is lowered, a receive's to NONE
  // until its send is known; filling them first cost 0.65 % of a search evaluation.)
  std::vector<std::unique_ptr<std::uint32_t[]>> first_task(num_devices), last_task(num_devices);
  std::vector<std::int32_t> plan_labels;  // by Label::id: the plan's id of the item label, or −1
  std::vector<std::uint32_t> folded_tasks;  // fast fidelity: the folded tasks, in the order of out.parts
  folded_tasks.reserve(out.parts.capacity());
  // Per sender's slot: (full fidelity) the instance its send and the peer's receive both
  // join, and (fast fidelity, where a receive lowers no task and each slot is asked for
  // once) the send's task, which the receive's step stands for.
  std::vector<std::uint32_t> p2p_comm(fidelity_ == Fidelity::FULL ? num_devices * m * v * 2 : 0, sim::NONE);
  std::vector<std::uint32_t> send_task(fidelity_ == Fidelity::FAST ? num_devices * m * v * 2 : 0, sim::NONE);
  auto send_slot = [&](std::uint32_t device, std::int32_t mb, std::int32_t chunk, Direction dir) {
    return ((static_cast<std::size_t>(device) * m + static_cast<std::size_t>(mb)) * v +
            static_cast<std::size_t>(chunk)) * 2 + static_cast<std::size_t>(dir);
  };
  double last_p2p_bytes = -1;
  struct SendPrice {
    std::int64_t to = -1;
    double bytes = -1;
    sim::Time time;
  };
  std::vector<SendPrice> send_price(fidelity_ == Fidelity::FAST ? static_cast<std::size_t>(stages_) * 3 : 0);
  // A pipeline transfer from `from` (stage from_stage) to `to`: a rendezvous of the
  // sender's and the receiver's tasks, made by whichever of the two is lowered first.
  auto p2p_instance = [&](std::uint32_t from, std::uint32_t to, std::int64_t from_stage, std::int64_t to_stage,
                          double bytes, std::size_t slot) {
    if (fidelity_ == Fidelity::FULL && p2p_comm[slot] != sim::NONE) return p2p_comm[slot];
    sim::CommInstance inst;
    inst.bytes = bytes;
    // Fast fidelity lowers the receive as edges into the send (below): one participant.
    inst.participants = fidelity_ == Fidelity::FULL ? 2 : 1;
    if (bytes != last_p2p_bytes) p2p_bytes_[bytes] = true;  // a pipeline sends one or two sizes
    last_p2p_bytes = bytes;
    if (fidelity_ == Fidelity::FULL) {
      auto [pos, fresh] = p2p_cache.try_emplace({from, to}, 0);
      const std::uint32_t pair[2] = {from, to};
      if (fresh) pos->second = b.add_pattern(hardware::ring_pattern(cluster_, hardware::Collective::SEND_RECV, pair));
      inst.pattern = pos->second;
    } else {
      // A stage sends to its two neighbours (and across the wrap between chunks), each the
      // same size micro-batch after micro-batch: priced once per neighbour and size.
      const std::size_t way = to_stage == from_stage + 1 ? 0 : to_stage == from_stage - 1 ? 1 : 2;
      SendPrice& known = send_price[static_cast<std::size_t>(from_stage) * 3 + way];
      if (known.to != to_stage || known.bytes != bytes)
        known = {to_stage, bytes, sim::Time::from_seconds(symmetric_send(from_stage, to_stage).seconds(bytes))};
      inst.fixed_duration = known.time;
    }
    const std::uint32_t comm = b.add_comm(inst);
    if (fidelity_ == Fidelity::FULL) p2p_comm[slot] = comm;
    return comm;
  };

  // Fast fidelity: the fold groups of each role, as a map from step to its group.
  std::vector<std::vector<std::uint32_t>> group_of_step(program_.roles.size());
  std::vector<std::vector<FoldGroup>> groups(program_.roles.size());
  if (fidelity_ == Fidelity::FAST)
    for (std::size_t r = 0; r < program_.roles.size(); ++r) {
      groups[r] = fold_groups(program_.roles[r]);
      if (groups[r].empty()) continue;  // no step is looked up
      group_of_step[r].assign(program_.roles[r].steps.size(), sim::NONE);
      for (std::uint32_t gi = 0; gi < groups[r].size(); ++gi)
        for (std::uint32_t k = groups[r][gi].first; k <= groups[r][gi].last; ++k) group_of_step[r][k] = gi;
    }

  // Op descriptors, shared by every task of the same item and group.
  std::map<std::tuple<std::int64_t, int, std::int32_t, std::uint32_t, std::uint32_t>, std::uint32_t> op_of_item;
  std::map<std::vector<std::uint32_t>, std::uint32_t> op_group_of;
  auto op_group = [&](std::vector<std::uint32_t> ranks) {
    auto [pos, fresh] = op_group_of.try_emplace(ranks, 0);
    if (fresh) pos->second = b.add_op_group(std::move(ranks));
    return pos->second;
  };
  auto describe_task = [&](std::uint32_t task, const Role& role, const Step& step, std::uint32_t index,
                           std::uint32_t group) {
    if (!options_.describe_ops) return;
    const auto key = std::make_tuple(static_cast<std::int64_t>(role.stage), static_cast<int>(step.list), step.chunk,
                                     index, group);
    auto [pos, fresh] = op_of_item.try_emplace(key, 0);
    if (fresh) pos->second = b.add_op(describe(role, role.list(step.list, step.chunk)[index], group));
    b.describe(task, pos->second);
  };

  // Fast fidelity: per template (chunk, direction), the items before each that are not
  // rank-local, and the collectives: whether a run or a piece of one folds, and how many
  // collectives it folds in. Found once per template and stage, or taken from the stage
  // lowered before (stage_prefix, of prefix_stage).
  struct TemplatePrefix {
    std::vector<std::uint32_t> not_local_before, collectives_before;
  };
  std::deque<TemplatePrefix> prefixes;  // stays put as it grows
  std::vector<const TemplatePrefix*> stage_prefix;
  std::int64_t prefix_stage = -1;

  for (std::uint32_t dev = 0; dev < num_devices; ++dev) {
    const std::uint32_t rank = out.device_rank[dev];
    const RankCoords c = pl_.coords(rank);
    const Role& role = program_.roles[static_cast<std::size_t>(c.stage)];
    std::uint64_t seq[3] = {0, 0, 0};
    // This rank's group in each dimension, found when a collective first asks (each of a
    // stage's collectives did: 0.5 % of a search evaluation).
    constexpr std::uint64_t NO_GROUP = ~std::uint64_t{0};
    std::uint64_t group_of_dim[3] = {NO_GROUP, NO_GROUP, NO_GROUP};
    std::uint32_t members_of_dim[3] = {0, 0, 0};  // its simulated members (this rank is one), 0 until asked
    for (int d = 0; d < static_cast<int>(MemClass::COUNT); ++d)
      b.set_initial_memory(dev, static_cast<std::uint8_t>(d),
                           static_cast<std::int64_t>(role.static_bytes[d] + runtime_bytes(static_cast<MemClass>(d))));
    first_task[dev] = std::make_unique_for_overwrite<std::uint32_t[]>(role.steps.size());
    last_task[dev] = std::make_unique_for_overwrite<std::uint32_t[]>(role.steps.size());
    std::uint32_t* const first = first_task[dev].get();
    std::uint32_t* const last = last_task[dev].get();

    auto spec_of = [&](const Step& step, const Item& it) {
      sim::PlanBuilder::TaskSpec ts;
      ts.device = dev;
      ts.stream = it.stream;
      ts.category = static_cast<std::uint8_t>(it.category);
      const std::uint32_t id = it.label.id();
      if (plan_labels.size() <= id) plan_labels.resize(id + 1, -1);
      if (plan_labels[id] < 0) plan_labels[id] = b.label(it.label.str());  // the plan's ids in first-use order, as before
      ts.label = static_cast<std::uint16_t>(plan_labels[id]);
      ts.micro_batch = step.micro_batch;
      ts.mem_class = static_cast<std::uint8_t>(it.mem_class);
      ts.alloc_bytes = it.alloc_bytes;
      ts.free_bytes = it.free_bytes;
      ts.mem_on_host = it.host_memory;
      return ts;
    };
    // Fast fidelity: one compute task for folded items (a group of steps or a whole run).
    // (`items`: the template's items, or pointers to them.)
    auto item_of = [](const auto& x) -> const Item& {
      if constexpr (std::is_pointer_v<std::decay_t<decltype(x)>>) return *x;
      else return x;
    };
    // What names a folded task in traces and critical paths: the computation that most of its
    // time is (a stage's forward may open with the all-gather of the activations it received,
    // scattered over the tensor group; a backward under recompute opens with the recomputed
    // forward), as its first compute item of that category, or its first item when it
    // computes nothing.
    auto naming_item = [&](const auto& items, const Folded& f) -> const Item* {
      std::size_t most = static_cast<std::size_t>(Category::COUNT);
      for (const Category cat : {Category::COMPUTE, Category::RECOMPUTE, Category::OPTIMIZER}) {
        const auto k = static_cast<std::size_t>(cat);
        if (f.parts[k].ps > 0 && (most == static_cast<std::size_t>(Category::COUNT) || f.parts[k] > f.parts[most]))
          most = k;
      }
      for (const auto& each : items) {
        const Item& x = item_of(each);
        if (x.kind == Item::Kind::COMPUTE && static_cast<std::size_t>(x.category) == most) return &x;
      }
      return &item_of(items.front());
    };
    auto add_folded = [&](const Step& head, const auto& items, const Item* named, const Folded& f,
                          std::uint64_t tp_collectives) {
      sim::PlanBuilder::TaskSpec ts = spec_of(head, *named);
      ts.stream = COMPUTE_STREAM;
      ts.mem_class = static_cast<std::uint8_t>(MemClass::ACTIVATIONS);
      ts.mem_on_host = false;
      ts.alloc_bytes = f.alloc_bytes;
      ts.free_bytes = f.free_bytes;
      ts.contention_share = f.contention_share;
      ts.link_slowdown = f.link_slowdown;
      const std::uint32_t task = b.add_compute(ts, f.duration);
      folded_tasks.push_back(task);  // its parts are out.parts[the same index]
      out.parts.push_back(f.parts);
      // Tensor-parallel collectives folded in keep their place in the group's sequence.
      seq[static_cast<int>(Dim::TENSOR)] += tp_collectives;
      if (options_.describe_ops) {
        // A folded run: the kernels of its compute items, and the bytes its collectives move.
        sim::OpDescriptor d;
        d.kind = sim::OpDescriptor::Kind::FOLDED;
        d.dtype = hardware::to_string(program_.spec.dtype);
        if (named->kind == Item::Kind::COMPUTE) d.name = segment_name(program_, role, *named) + "…";
        for (const auto& each : items) {
          const Item& x = item_of(each);
          if (x.kind == Item::Kind::COLLECTIVE) {
            d.bytes += x.collective.bytes;
          } else {
            d.flops += item_flops(role, x);
            if (d.name.empty()) d.name = segment_name(program_, role, x) + "…";
          }
        }
        b.describe(task, b.add_op(std::move(d)));
      }
      return task;
    };
    // One item as its own task.
    auto add_item = [&](const Step& step, const Item& it, std::uint32_t index) -> std::uint32_t {
      sim::PlanBuilder::TaskSpec ts = spec_of(step, it);
      if (it.kind == Item::Kind::COMPUTE) {
        const std::uint32_t task = b.add_compute(ts, compute_time(it, c.stage));
        describe_task(task, role, step, index, sim::NONE);
        return task;
      }
      if (it.kind == Item::Kind::COPY) {
        const bool to_host = it.copy.way == CopyNeed::Way::DEVICE_TO_HOST;
        auto [pos, fresh] = copy_cache.try_emplace({rank, to_host}, 0);
        if (fresh) {
          sim::CommPattern pat;
          pat.name = to_host ? "copy-d2h" : "copy-h2d";
          pat.route_links = cluster_.host_route(rank, to_host);
          double per_unit = 1.0;
          if (fidelity_ == Fidelity::FAST) {
            // Fast fidelity lowers one rank per stage, so its copy would run alone; every GPU
            // of a symmetric program copies at once, and GPUs on one PCIe switch share its
            // uplink: the copy carries its share as the topology's closed form counts it.
            double alone = std::numeric_limits<double>::infinity();
            for (const std::uint32_t link : pat.route_links) alone = std::min(alone, cluster_.links()[link].bytes_per_s);
            per_unit = cluster_.host_copy_seconds(rank, to_host, 1.0) * alone;
          }
          pat.flows.push_back({0, static_cast<std::uint32_t>(pat.route_links.size()), per_unit});
          pos->second = b.add_pattern(std::move(pat));
        }
        const std::uint32_t task = b.add_copy(ts, pos->second, it.copy.bytes);
        describe_task(task, role, step, index, sim::NONE);
        return task;
      }
      if (step.kind == Step::Kind::SEND || step.kind == Step::Kind::RECV) {
        const std::uint32_t peer = pl_.with(rank, ParallelDim::PIPELINE, step.peer_stage);
        const bool send = step.kind == Step::Kind::SEND;
        const std::uint32_t comm =
            send ? p2p_instance(rank, peer, c.stage, step.peer_stage, it.collective.bytes,
                                send_slot(dev, step.micro_batch, step.chunk, step.direction))
                 : p2p_instance(peer, rank, step.peer_stage, c.stage, it.collective.bytes,
                                send_slot(device_of_rank[peer], step.micro_batch, step.peer_chunk, step.direction));
        const std::uint32_t task = b.add_comm_task(ts, comm);
        if (options_.describe_ops) describe_task(task, role, step, index, op_group({rank, peer}));
        if (send && fidelity_ == Fidelity::FAST) send_task[send_slot(dev, step.micro_batch, step.chunk, step.direction)] = task;
        return task;
      }
      // A collective over a group: every simulated member joins the same instance.
      const auto dim = static_cast<int>(it.collective.dim);
      std::uint64_t& gid = group_of_dim[dim];
      if (gid == NO_GROUP) gid = pl_.group_id(parallel_dim(it.collective.dim), rank);
      // The simulated members of the group, counted once per group and layout (a stage's
      // buckets each make an instance of the same group, and every variant of a search with
      // this layout asks again).
      std::uint32_t& members = members_of_dim[dim];
      if (members == 0) {
        const std::tuple<int, int, std::uint64_t> group{static_cast<int>(fidelity_), dim, gid};
        members = memoized(memo_.simulated_members, group, [&] {
          std::uint32_t n = 0;
          for (auto r : group_ranks(pl_, it.collective.dim, rank)) n += device_of_rank[r] != sim::NONE ? 1 : 0;
          return n;
        });
      }
      auto new_instance = [&] {
        sim::CommInstance inst;
        inst.bytes = it.collective.bytes;
        inst.latency_scale = it.collective.latency_scale;
        inst.occupies_sms = it.collective.occupies_sms;
        inst.participants = members;
        if (fidelity_ == Fidelity::FULL) {
          const auto ranks = group_ranks(pl_, it.collective.dim, rank);
          const hardware::AlgorithmChoice ch = choice(it.collective, c.stage);
          auto [pp, pfresh] = pattern_cache.try_emplace(
              {dim, gid, static_cast<int>(it.collective.op), static_cast<int>(ch.algorithm), static_cast<int>(ch.protocol)},
              0);
          if (pfresh) pp->second = b.add_pattern(hardware::collective_pattern(cluster_, it.collective.op, ranks, ch));
          inst.pattern = pp->second;
        } else {
          inst.fixed_duration = closed_form(it.collective, c);
          inst.shares_links = it.collective.dim == Dim::DATA && tp_interference(c.stage) > 0;
        }
        return b.add_comm(inst);
      };
      const std::uint64_t key = instance_key(gid, seq[dim]++);
      std::uint32_t comm;
      if (members == 1) {
        comm = new_instance();  // no other simulated rank joins it (fast fidelity's data-parallel groups)
      } else {
        auto [pos, fresh] = instances[dim].try_emplace(key, 0);
        if (fresh) pos->second = new_instance();
        comm = pos->second;
      }
      const std::uint32_t task = b.add_comm_task(ts, comm);
      if (options_.describe_ops)
        describe_task(task, role, step, index, op_group(group_ranks(pl_, it.collective.dim, rank)));
      return task;
    };

    std::vector<const Item*> folded;
    std::vector<std::uint32_t> run_tasks;
    // Fast fidelity: whether each template (chunk, direction) folds whole, and its items, found
    // once per rank rather than once per micro-batch's run of it.
    struct WholeTemplate {
      const TemplatePrefix* prefix = nullptr;
      const Folded* outcome = nullptr;  // the whole run's fold_cache_ entry
      const Item* named = nullptr;      // what names its task (naming_item)
    };
    std::vector<WholeTemplate> whole_template(role.chunks.size() * 2);
    for (std::size_t i = 0; i < role.steps.size(); ++i) {
      const Step& step = role.steps[i];
      if (fidelity_ == Fidelity::FAST && step.kind == Step::Kind::RECV) {  // the peer's send stands for it
        first[i] = last[i] = sim::NONE;
        continue;
      }
      if (step.whole_run || step.count > 1) {
        const auto items = role.items(step);
        if (fidelity_ == Fidelity::FAST) {
          // Folded when all of it is rank-local: a whole run once per template, a piece (the
          // pieces of one run differ) once per lowering.
          const std::size_t t = static_cast<std::size_t>(step.chunk) * 2 + (step.list == ItemList::BACKWARD);
          WholeTemplate& w = whole_template[t];
          if (w.prefix == nullptr) {
            // A middle stage whose template is the stage before's in all that folding reads
            // (rank_local reads a subset) has its counts.
            if (c.stage > 0 && prefix_stage == c.stage - 1 && t < stage_prefix.size() && stage_prefix[t] != nullptr &&
                like_previous_stage(c.stage, step.list, step.chunk)) {
              w.prefix = stage_prefix[t];
            } else {
              const auto& all = role.list(step.list, step.chunk);
              TemplatePrefix& made = prefixes.emplace_back();
              made.not_local_before.assign(all.size() + 1, 0);
              made.collectives_before.assign(all.size() + 1, 0);
              for (std::size_t k = 0; k < all.size(); ++k) {
                made.not_local_before[k + 1] = made.not_local_before[k] + (rank_local(all[k]) ? 0 : 1);
                made.collectives_before[k + 1] = made.collectives_before[k] + (all[k].kind == Item::Kind::COLLECTIVE ? 1 : 0);
              }
              w.prefix = &made;
            }
          }
          const TemplatePrefix& pre = *w.prefix;
          const std::uint32_t end = step.index + step.count;
          if (pre.not_local_before[end] == pre.not_local_before[step.index]) {
            const Folded* outcome = w.outcome;
            const Item* named = w.named;
            if (!step.whole_run) {
              outcome = &fold_run(role, step, c);
              named = naming_item(items, *outcome);
            } else if (outcome == nullptr) {
              outcome = w.outcome = &fold_run(role, step, c);
              named = w.named = naming_item(items, *outcome);
            }
            const std::uint64_t collectives = pre.collectives_before[end] - pre.collectives_before[step.index];
            first[i] = last[i] = add_folded(step, items, named, *outcome, collectives);
            continue;
          }
        }
        // Item by item, each waiting for what the template says.
        run_tasks.clear();
        for (std::uint32_t j = 0; j < items.size(); ++j) {
          run_tasks.push_back(add_item(step, items[j], step.index + j));
          for (const Dep& d : items[j].deps) {
            if (d.target != Dep::Target::PREVIOUS || static_cast<std::uint32_t>(d.offset) > j) continue;
            const std::uint32_t from = run_tasks[j - static_cast<std::uint32_t>(d.offset)];
            if (d.on == Dep::On::END) b.add_edge(from, run_tasks[j]);
            else b.add_start_edge(from, run_tasks[j]);
          }
        }
        first[i] = run_tasks.front();
        last[i] = run_tasks.back();
        continue;
      }
      if (fidelity_ == Fidelity::FAST) {
        const auto& group_of = group_of_step[static_cast<std::size_t>(c.stage)];
        const std::uint32_t gi = group_of.empty() ? sim::NONE : group_of[i];
        if (gi != sim::NONE) {
          const FoldGroup& g = groups[static_cast<std::size_t>(c.stage)][gi];
          folded.clear();
          std::uint64_t collectives = 0;
          for (std::uint32_t k = g.first; k <= g.last; ++k) {
            folded.push_back(&role.item(role.steps[k]));
            collectives += folded.back()->kind == Item::Kind::COLLECTIVE;
          }
          const Folded& outcome = fold(role, g, c);
          const std::uint32_t task = add_folded(step, folded, naming_item(folded, outcome), outcome, collectives);
          for (std::uint32_t k = g.first; k <= g.last; ++k) first[k] = last[k] = task;
          i = g.last;
          continue;
        }
      }
      first[i] = last[i] = add_item(step, role.item(step), step.index);
    }
    stage_prefix.assign(whole_template.size(), nullptr);
    for (std::size_t t = 0; t < whole_template.size(); ++t) stage_prefix[t] = whole_template[t].prefix;
    prefix_stage = c.stage;
  }

  // Fast fidelity: a receive is the peer's send task. The send starts once the receiver has
  // posted the receive (the receive step's own dependencies become the send's, below) and
  // the sender is ready: the same rendezvous as two participants, without a task for the
  // receiver. The receives of a stream come from one peer in the order it sends them, so the
  // sender's stream keeps the receiver's stream order too.
  if (fidelity_ == Fidelity::FAST) {
    for (std::uint32_t dev = 0; dev < num_devices; ++dev) {
      const std::uint32_t rank = out.device_rank[dev];
      const Role& role = program_.roles[static_cast<std::size_t>(pl_.coords(rank).stage)];
      for (std::size_t i = 0; i < role.steps.size(); ++i) {
        const Step& step = role.steps[i];
        if (step.kind != Step::Kind::RECV) continue;
        const std::uint32_t peer = device_of_rank[pl_.with(rank, ParallelDim::PIPELINE, step.peer_stage)];
        const std::uint32_t task = send_task[send_slot(peer, step.micro_batch, step.peer_chunk, step.direction)];
        if (task == sim::NONE) throw std::logic_error("lower: a receive whose send was never issued");
        first_task[dev][i] = last_task[dev][i] = task;
      }
    }
  }

  // Dependencies: within a rank by step (a receive ends with the peer's send).
  for (std::uint32_t dev = 0; dev < num_devices; ++dev) {
    const RankCoords c = pl_.coords(out.device_rank[dev]);
    const Role& role = program_.roles[static_cast<std::size_t>(c.stage)];
    const std::uint32_t* const first = first_task[dev].get();
    const std::uint32_t* const last = last_task[dev].get();
    for (std::size_t i = 0; i < role.steps.size(); ++i) {
      if (first[i] == sim::NONE) continue;
      for (const StepDep& d : role.deps(role.steps[i])) {
        const std::uint32_t from = d.on == Dep::On::END ? last[d.step] : first[d.step];
        if (from == sim::NONE) throw std::logic_error("lower: a step depends on a step that was never lowered");
        if (from == first[i]) continue;  // steps folded into one task
        if (d.on == Dep::On::END) b.add_edge(from, first[i]);
        else b.add_start_edge(from, first[i]);
      }
    }
  }
  out.plan = std::move(b).finish();
  // (Indexed once the tasks are counted: growing it task by task cost 0.8 % of an evaluation.)
  out.parts_of_task.assign(out.plan.size(), sim::NONE);
  for (std::size_t i = 0; i < folded_tasks.size(); ++i) out.parts_of_task[folded_tasks[i]] = static_cast<std::uint32_t>(i);
  // Compute that shares the GPU with running communication loses the SMs and memory
  // bandwidth the communication kernels take (the profile's contention factor).
  out.plan.contention_slowdown = contention_;
  out.plan.contended_stream = COMPUTE_STREAM;
  // Only flows read the links (a fast plan's closed forms have none): a plan without
  // patterns does not copy a large cluster's link table.
  if (!out.plan.patterns.empty()) out.network = cluster_.network();
  // Every stage's groups of a dimension have one shape, so one entry per (dim, op, bytes).
  std::map<std::tuple<int, int, double>, hardware::AlgorithmChoice> kinds;
  for (const auto& [key, ch] : choice_cache_)
    kinds.try_emplace({std::get<0>(key), std::get<2>(key), std::get<3>(key)}, ch);
  for (const auto& [key, ch] : kinds)
    out.collectives.push_back({static_cast<Dim>(std::get<0>(key)), static_cast<hardware::Collective>(std::get<1>(key)),
                               std::get<2>(key), ch});
  // Pipeline sends are point to point: NCCL runs them directly, with the Simple protocol.
  for (const auto& [bytes, used] : p2p_bytes_)
    out.collectives.push_back({Dim::PIPELINE, hardware::Collective::SEND_RECV, bytes,
                               {hardware::Algorithm::DIRECT, hardware::Protocol::SIMPLE, 1, 0.0}});
  return out;
}

}  // namespace

Lowered lower(const Program& program, const hardware::Cluster& cluster, const hardware::CostModel& cost,
              Fidelity fidelity, const LowerOptions& options) {
  return Lowering(program, cluster, cost, fidelity, options).run();
}

double comm_buffer_bytes(const Layout& layout, const models::ModelConfig& model, const hardware::GpuProfile& gpu) {
  const int communicators = (layout.tensor > 1 ? 1 : 0) + (layout.data > 1 ? 1 : 0) + (layout.pipeline > 1 ? 1 : 0) +
                            (layout.pipeline > 1 && model.tied_embedding ? 1 : 0);
  return communicators * gpu.nccl_buffer_bytes_per_communicator().value();
}

}  // namespace trainsim::strategies
