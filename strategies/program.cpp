#include "strategies/program.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace trainsim::strategies {

const char* to_string(Category c) {
  switch (c) {
    case Category::COMPUTE: return "compute";
    case Category::RECOMPUTE: return "recompute";
    case Category::OPTIMIZER: return "optimizer";
    case Category::TP_COMM: return "tp-comm";
    case Category::DP_COMM: return "dp-comm";
    case Category::PP_COMM: return "pp-comm";
    case Category::COUNT: break;
  }
  return "?";
}

const char* to_string(MemClass c) {
  switch (c) {
    case MemClass::WEIGHTS: return "weights";
    case MemClass::GRADIENTS: return "gradients";
    case MemClass::OPTIMIZER_STATES: return "optimizer_states";
    case MemClass::ACTIVATIONS: return "activations";
    case MemClass::COMM_BUFFERS: return "comm_buffers";
    case MemClass::CUDA_CONTEXT: return "cuda_context";
    case MemClass::CUBLAS_WORKSPACE: return "cublas_workspace";
    case MemClass::COUNT: break;
  }
  return "?";
}

std::string Program::pipeline_string() const {
  std::string out;
  for (const auto& p : passes_run) {
    if (!out.empty()) out += ',';
    out += p;
  }
  return out;
}

StateBytes state_bytes_per_param(const TrainingSpec& spec) {
  StateBytes b;
  // 16-bit weights in every mixed-precision recipe (FP8 GEMMs still keep BF16 weights).
  b.weights = 2;
  // Megatron accumulates and reduces gradients in fp32 for BF16 (forced on), in the
  // parameter dtype for FP16 unless asked otherwise: 18 vs 16 bytes/param (formulas.md).
  // (Megatron-LM megatron/training/arguments.py: --accumulate-allreduce-grads-in-fp32 is a
  // store_true flag, and only --bf16 turns it on; --grad-reduce-in-bf16 turns it off.)
  const bool fp32 = fp32_gradients(spec);
  b.gradients = fp32 ? 4 : 2;
  // 16-bit gradients: the optimizer keeps fp32 main gradients all the same — its step sets
  // each fp32 main parameter's .grad to the 16-bit gradient cast to fp32 and frees them after
  // the step (Megatron-LM Float16OptimizerWithFloat16Params and DistributedOptimizer:
  // _copy_model_grads_to_main_grads, zero_grad(set_to_none)). An fp32 buffer is stepped on
  // as it is (.float() of an fp32 tensor is the tensor).
  b.main_gradients = fp32 ? 0 : 4;
  // Adam: fp32 master weights + two fp32 moments; SGD: fp32 master + momentum.
  b.optimizer = spec.optimizer == Optimizer::ADAM ? 12 : 8;
  return b;
}

std::int64_t word_embedding_shard_params(const models::ModelConfig& model, std::int64_t tensor) {
  return (model.vocab + tensor - 1) / tensor * model.hidden;
}

double fp8_weight_copy_bytes(const TrainingSpec& spec, const models::Op& op) {
  if (spec.dtype != hardware::Dtype::FP8 || !op.fp8_linear) return 0;
  return 2 * static_cast<double>(op.gemm.k) * static_cast<double>(op.gemm.n);
}

namespace {

// apex multi_tensor_apply (which Megatron's optimizer passes call through
// multi_tensor_applier): chunks of 2048·32 elements, at most 320 blocks per launch
// (apex csrc/multi_tensor_apply.cuh depth_to_max_blocks; Megatron chunk size 2048 * 32).
constexpr double ELEMENTS_PER_LAUNCH = 320.0 * 2048 * 32;

// When a pass runs: always, with 16-bit gradients (the cast to fp32 main gradients), or with
// FP16 (the loss scale's unscaling: BF16 keeps no loss scale).
enum class PassWhen : std::uint8_t { ALWAYS, HALF_GRADIENTS, FP16 };

struct OptimizerPass {
  double bytes_per_param;
  PassWhen when;
};

bool runs(const OptimizerPass& p, const TrainingSpec& spec) {
  switch (p.when) {
    case PassWhen::ALWAYS: return true;
    case PassWhen::HALF_GRADIENTS: return !fp32_gradients(spec);
    case PassWhen::FP16: return spec.dtype == hardware::Dtype::FP16;
  }
  return true;
}

// The passes of Megatron-LM's mixed-precision step over the fp32 main parameters, with the
// HBM bytes each reads and writes per parameter (fp32 = 4, 16-bit = 2):
//  16-bit gradients only: cast the 16-bit gradient to the fp32 main gradient (read 2, write 4).
//  FP16 only: unscale the main gradient by the loss scale and check for inf/nan
//    (torch._amp_foreach_non_finite_check_and_unscale_: read 4, write 4).
//  gradient norm for clipping (multi_tensor_l2norm): read 4.
//  Adam (apex multi_tensor_adam): read gradient, main weight, both moments; write main
//    weight and both moments: 16 + 12 = 28. SGD with momentum: read 12, write 8 = 20.
//  copy the main weights back to the 16-bit model weights (multi_tensor_scale): read 4, write 2.
// (Clipping scales the gradients only when the norm exceeds the threshold; not counted.)
std::vector<OptimizerPass> optimizer_passes(const TrainingSpec& spec) {
  return {{6, PassWhen::HALF_GRADIENTS},
          {8, PassWhen::FP16},
          {4, PassWhen::ALWAYS},
          {spec.optimizer == Optimizer::ADAM ? 28.0 : 20.0, PassWhen::ALWAYS},
          {6, PassWhen::ALWAYS}};
}

}  // namespace

double optimizer_step_bytes_per_param(const TrainingSpec& spec) {
  double total = 0;
  for (const auto& p : optimizer_passes(spec))
    if (runs(p, spec)) total += p.bytes_per_param;
  return total;
}

models::Op optimizer_step_op(const TrainingSpec& spec, double params, double buffer_params) {
  models::Op step;
  step.name = "optimizer_step";
  step.cls = models::ComputeClass::ELEMENTWISE;
  const double launches = std::max(1.0, std::ceil(params / ELEMENTS_PER_LAUNCH));
  int kernels = 0;
  for (const auto& p : optimizer_passes(spec))
    if (runs(p, spec)) kernels += static_cast<int>(launches);
  // Zeroing the whole gradient buffer for the next iteration's accumulation (Megatron's
  // zero_grad_buffer, one memset per buffer): write its bytes once.
  const double zero_bytes = buffer_params * state_bytes_per_param(spec).gradients;
  step.fwd_bytes = params * optimizer_step_bytes_per_param(spec) + zero_bytes;
  step.fwd_kernels = kernels + 1;
  return step;
}

std::int64_t activation_bytes(const Segment& segment, bool selective_only) {
  // Rounded per op so that any grouping of the same ops sums to the same bytes, which keeps
  // allocations and frees balanced when forward and backward cut segments differently.
  std::int64_t total = 0;
  for (const auto& op : segment.ops)
    if (!selective_only || op.selective_recompute) total += std::llround(op.activation_bytes);
  return total;
}

std::uint8_t Program::stream(const std::string& name) {
  for (std::size_t i = 0; i < streams.size(); ++i)
    if (streams[i] == name) return static_cast<std::uint8_t>(i);
  streams.push_back(name);
  return static_cast<std::uint8_t>(streams.size() - 1);
}

std::size_t Role::item_steps() const {
  std::size_t n = 0;
  for (const Step& s : steps) n += s.count;  // a receive is one task too
  return n;
}

// The passes copy templates by the vector: a plain memory copy only while an Item is trivially copyable.
static_assert(std::is_trivially_copyable_v<Item>);

void Dep::offset_too_far(std::int32_t offset) {
  throw std::logic_error("a dependency reaches " + std::to_string(offset) +
                         " items, layers or micro-batches away; a Dep holds offsets in [" +
                         std::to_string(INT16_MIN) + ", " + std::to_string(INT16_MAX) + "]");
}

void DepList::too_many() {
  throw std::logic_error("an item waits for at most " + std::to_string(MAX_DEPS) +
                         " dependencies besides its stream's order (DepList::MAX_DEPS)");
}

bool is_scheduled(const Program& program) {
  for (const auto& r : program.roles)
    if (!r.steps.empty()) return true;
  return false;
}

// Branch-free per item, its fields read as words: the fold and the passes that ask compare
// most items of a chunk, and most lists compared are alike.
bool alike_but_layer(std::span<const Item> a, std::span<const Item> b) {
  if (a.size() != b.size()) return false;
  // Words with no padding in them: kind, cost, category, stream and segment are the item's
  // first eight bytes, mem_class, host_memory and label the four before its layer; a
  // collective's dim, op and occupies_sms its first three and a copy's way its first (the
  // padding after them masked off); a wait's twelve bytes have none.
  static_assert(offsetof(Item, kind) == 0 && offsetof(Item, cost) == 1 && offsetof(Item, category) == 2 &&
                offsetof(Item, stream) == 3 && offsetof(Item, segment) == 4 && sizeof(Item::segment) == 4 &&
                offsetof(Item, mem_class) == 8 && offsetof(Item, host_memory) == 9 && offsetof(Item, label) == 10 &&
                sizeof(Label) == 2 && offsetof(Item, layer) == 12);
  static_assert(offsetof(CollectiveNeed, dim) == 0 && offsetof(CollectiveNeed, op) == 1 &&
                offsetof(CollectiveNeed, occupies_sms) == 2 && offsetof(CopyNeed, way) == 0);
  static_assert(std::has_unique_object_representations_v<Dep> && sizeof(Dep) == 12);
  const auto word = [](const void* p) {
    std::uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
  };
  const auto half = [](const void* p) {
    std::uint32_t w;
    std::memcpy(&w, p, sizeof w);
    return std::uint64_t{w};
  };
  const auto bits = [&](const double& v) { return word(&v); };
  for (std::size_t j = 0; j < a.size(); ++j) {
    const Item& x = a[j];
    const Item& y = b[j];
    std::uint64_t differ =
        (word(&x) ^ word(&y)) | (half(&x.mem_class) ^ half(&y.mem_class)) |
        static_cast<std::uint64_t>(x.alloc_bytes ^ y.alloc_bytes) |
        static_cast<std::uint64_t>(x.free_bytes ^ y.free_bytes) | (bits(x.fraction) ^ bits(y.fraction)) |
        (bits(x.collective.bytes) ^ bits(y.collective.bytes)) |
        (bits(x.collective.latency_scale) ^ bits(y.collective.latency_scale)) |
        ((half(&x.collective) ^ half(&y.collective)) & 0xFFFFFFu) |
        static_cast<std::uint64_t>(x.copy.way != y.copy.way) | (bits(x.copy.bytes) ^ bits(y.copy.bytes)) |
        (x.deps.size() ^ y.deps.size());
    if (differ != 0) return false;
    const auto* u = reinterpret_cast<const unsigned char*>(x.deps.begin());
    const auto* v = reinterpret_cast<const unsigned char*>(y.deps.begin());
    for (std::size_t k = 0; k < x.deps.size(); ++k, u += sizeof(Dep), v += sizeof(Dep))
      differ |= (word(u) ^ word(v)) | (half(u + 8) ^ half(v + 8));
    if (differ != 0) return false;
  }
  return true;
}

namespace {

struct TaggedOp {
  const models::Op* op;
  std::int32_t group;  // −1 embedding, layer index, or num_layers for the head
};

std::string group_name(std::int32_t group, std::int64_t num_layers) {
  if (group < 0) return "embedding";
  if (group == num_layers) return "head";
  return "layer" + std::to_string(group);
}

Item collective_item(Dim dim, hardware::Collective op, double bytes, std::int32_t group) {
  Item it;
  it.kind = Item::Kind::COLLECTIVE;
  it.collective = {dim, op, bytes};
  it.category = dim == Dim::TENSOR ? Category::TP_COMM : dim == Dim::DATA ? Category::DP_COMM : Category::PP_COMM;
  it.stream = COMPUTE_STREAM;  // Megatron's tensor-parallel collectives block the compute stream
  it.layer = group;  // waits for the item before it (Item's default)
  // "tp-all-gather", named once per (dimension, collective) for the process.
  static const auto labels = [] {
    constexpr std::size_t COLLECTIVES = static_cast<std::size_t>(hardware::Collective::ALL_TO_ALL) + 1;  // the last
    std::array<std::array<Label, COLLECTIVES>, 3> out;
    for (int d = 0; d < 3; ++d)
      for (std::size_t o = 0; o < out[0].size(); ++o)
        out[static_cast<std::size_t>(d)][o] = Label(std::string(d == 0 ? "tp-" : d == 1 ? "dp-" : "pp-") +
                                                    hardware::to_string(static_cast<hardware::Collective>(o)));
    return out;
  }();
  it.label = labels[static_cast<std::size_t>(dim)][static_cast<std::size_t>(op)];
  return it;
}

// Where a segment of a template sits among identical ones: the same ordinal of the same
// kind of layer group in the same direction holds the same ops.
struct SegmentKey {
  int group_kind;  // 0 embedding, 1 transformer layer, 2 head
  Direction dir;
  std::uint32_t ordinal;  // among the group's segments in this direction
  auto operator<=>(const SegmentKey&) const = default;
};
struct SharedSegment {
  std::uint32_t index;     // into Role::segments
  std::int64_t activation; // activation_bytes of it
};
using SegmentIndex = std::map<SegmentKey, SharedSegment>;

// Cuts the op sequence into compute segments at tensor-parallel boundaries and layer
// changes, inserting the collectives Megatron's f/g operators need in this direction. A
// segment that an identical layer already has is referenced, not built again.
void build_template(Role& role, Chunk& chunk, const std::vector<TaggedOp>& ops, Direction dir, std::int64_t tensor,
                    bool sequence_parallel, std::int64_t num_layers, SegmentIndex& shared) {
  auto& out = dir == Direction::FORWARD ? chunk.forward : chunk.backward;
  // Ops per group (embedding −1 … head num_layers): a segment holds at most its group's, so
  // each segment's op list is allocated once.
  std::vector<std::size_t> group_ops(static_cast<std::size_t>(num_layers) + 2, 0);
  for (const auto& t : ops) ++group_ops[static_cast<std::size_t>(t.group + 1)];
  auto kind_of = [&](std::int32_t group) { return group < 0 ? 0 : group == num_layers ? 2 : 1; };
  Segment current;
  std::size_t current_ops = 0;  // ops of the segment being cut (not copied when it is shared)
  const SharedSegment* known = nullptr;
  std::int32_t current_group = 0;
  std::uint32_t ordinal = 0;
  auto flush = [&]() {
    if (current_ops == 0) return;
    SharedSegment seg;
    if (known != nullptr) {
      seg = *known;
    } else {
      seg = {static_cast<std::uint32_t>(role.segments.size()), activation_bytes(current)};
      current.name = std::string(dir == Direction::FORWARD ? "fwd" : "bwd") + std::to_string(ordinal);
      current.of_layer = true;
      role.segments.push_back(std::move(current));
      shared.emplace(SegmentKey{kind_of(current_group), dir, ordinal}, seg);
    }
    Item it;
    it.kind = Item::Kind::COMPUTE;
    it.segment = seg.index;
    it.cost = dir == Direction::FORWARD ? Cost::FORWARD : Cost::BACKWARD;
    it.layer = current_group;  // waits for the item before it (Item's default)
    it.label = compute_label(dir);
    if (dir == Direction::FORWARD)
      it.alloc_bytes = seg.activation;
    else
      it.free_bytes = seg.activation;
    current = Segment{};
    current_ops = 0;
    known = nullptr;
    ++ordinal;
    out.push_back(std::move(it));
  };
  const bool tp = tensor > 1;
  const auto exit_fwd = sequence_parallel ? hardware::Collective::REDUCE_SCATTER : hardware::Collective::ALL_REDUCE;
  auto visit = [&](const TaggedOp& t) {
    const models::Op& op = *t.op;
    if (t.group != current_group) {
      flush();
      ordinal = 0;
    }
    current_group = t.group;
    // Collectives that precede the op in this direction.
    const auto before = dir == Direction::FORWARD ? models::TpBoundary::ENTER : models::TpBoundary::EXIT;
    const auto after = dir == Direction::FORWARD ? models::TpBoundary::EXIT : models::TpBoundary::ENTER;
    if (tp && sequence_parallel && op.tp_boundary == before) {
      flush();
      out.push_back(collective_item(Dim::TENSOR, hardware::Collective::ALL_GATHER, op.tp_comm_bytes, t.group));
    }
    // With sequence parallelism a column-parallel GEMM keeps only its sequence shard of the
    // input; its backward all-gathers the input again for the weight gradient (Megatron-LM
    // LinearWithGradAccumulationAndAsyncCommunication.backward; Korthikanti et al. 2022
    // §4.2.2). Megatron issues it asynchronously beside the input-gradient GEMM; here it
    // blocks the stream like the other tensor-parallel collectives unless overlap-tp-comm
    // pipelines it with the GEMM.
    if (tp && sequence_parallel && dir == Direction::BACKWARD && op.tp_boundary == models::TpBoundary::ENTER &&
        op.cls == models::ComputeClass::GEMM) {
      flush();
      out.push_back(collective_item(Dim::TENSOR, hardware::Collective::ALL_GATHER, op.tp_comm_bytes, t.group));
      static const Label INPUT_GATHER("tp-sp-weight-input-allgather");  // interned once, not per layer
      out.back().label = INPUT_GATHER;
    }
    if (current_ops == 0) {
      const auto found = shared.find(SegmentKey{kind_of(t.group), dir, ordinal});
      known = found == shared.end() ? nullptr : &found->second;
      if (known == nullptr) current.ops.reserve(group_ops[static_cast<std::size_t>(t.group + 1)]);
    }
    if (known == nullptr) current.ops.push_back(op);
    ++current_ops;
    if (tp && op.tp_boundary == after) {
      flush();
      out.push_back(collective_item(Dim::TENSOR, exit_fwd, op.tp_comm_bytes, t.group));
    }
  };
  // The transformer layers of a chunk cut into the same items but for the layer they name:
  // the first met is cut op by op, each other one copies its items.
  std::size_t block_begin = 0, block_size = 0;
  enum { NONE, CUTTING, CUT } block = NONE;
  auto cut_group = [&](auto first, auto last) {
    const std::int32_t group = first->group;
    const bool layer = group >= 0 && group < num_layers;
    if (group != current_group) {
      flush();  // what the group before left pending, as visit would at its first op
      ordinal = 0;
      current_group = group;
    }
    if (block == CUTTING) {
      block_size = out.size() - block_begin;
      block = CUT;
    }
    if (layer && block == CUT) {
      if (out.capacity() < out.size() + block_size) out.reserve(std::max(out.size() + block_size, 2 * out.capacity()));
      for (std::size_t i = 0; i < block_size; ++i) {
        out.push_back(out[block_begin + i]);
        out.back().layer = group;
      }
      return;
    }
    if (layer && block == NONE) {
      block = CUTTING;
      block_begin = out.size();
    }
    for (auto t = first; t != last; ++t) visit(*t);
  };
  auto cut_groups = [&](auto begin, auto end) {
    for (auto first = begin; first != end;) {
      auto last = first;
      while (last != end && last->group == first->group) ++last;
      cut_group(first, last);
      first = last;
    }
  };
  if (dir == Direction::FORWARD)
    cut_groups(ops.begin(), ops.end());
  else
    cut_groups(ops.rbegin(), ops.rend());
  flush();
}

}  // namespace

const Label& compute_label(Direction dir) {
  static const Label FWD("fwd"), BWD("bwd");  // named once
  return dir == Direction::FORWARD ? FWD : BWD;
}

std::string segment_name(const Program& program, const Role& role, const Item& item) {
  const Segment& seg = role.segments[item.segment];
  return seg.of_layer ? group_name(item.layer, program.spec.model.layers) + "." + seg.name : seg.name;
}

bool Role::has_embedding() const {
  for (const auto& c : chunks)
    if (c.has_embedding) return true;
  return false;
}

bool Role::has_head() const {
  for (const auto& c : chunks)
    if (c.has_head) return true;
  return false;
}

std::int64_t Role::num_layers() const {
  std::int64_t n = 0;
  for (const auto& c : chunks) n += static_cast<std::int64_t>(c.layers.size());
  return n;
}

models::ShardSpec layer_shard(const Program& program) {
  return layer_shard(program.spec, program.applied.tensor, program.applied.sequence_parallel);
}

models::ShardSpec layer_shard(const TrainingSpec& spec, std::int64_t tensor, bool sequence_parallel) {
  models::ShardSpec shard;
  shard.micro_batch = spec.micro_batch;
  shard.sequence = spec.sequence;
  shard.tensor = tensor;
  shard.sequence_parallel = sequence_parallel && tensor > 1;
  shard.flash_attention = spec.flash_attention;
  shard.fp8_linear_inputs = spec.dtype == hardware::Dtype::FP8;  // Transformer Engine's FP8 linears
  shard.main_grad_bytes = static_cast<int>(state_bytes_per_param(spec).gradients);
  shard.gradient_accumulation_fusion = spec.gradient_accumulation_fusion;
  return shard;
}

void rebuild_role(Role& role, const Program& program) {
  const TrainingSpec& spec = program.spec;
  const models::ModelConfig& model = spec.model;
  const models::ShardSpec shard = layer_shard(program);

  // The layers of a stage are identical: build one and reference it.
  const std::shared_ptr<const models::LayerSet> layers = models::shared_layers(model, shard);
  const models::Layer& layer = layers->transformer;
  const models::Layer& embedding = layers->embedding;
  const models::Layer& head = layers->head;

  role.segments.clear();
  role.prologue.clear();
  role.floating.clear();
  role.tail.clear();
  role.transfers.clear();
  role.steps.clear();
  role.params = 0;
  double fp8_copies = 0;
  SegmentIndex shared;
  for (auto& chunk : role.chunks) {
    std::vector<TaggedOp> ops;
    if (chunk.has_embedding)
      for (const auto& op : embedding.ops) ops.push_back({&op, -1});
    for (std::int32_t l : chunk.layers)
      for (const auto& op : layer.ops) ops.push_back({&op, l});
    if (chunk.has_head)
      for (const auto& op : head.ops) ops.push_back({&op, static_cast<std::int32_t>(model.layers)});
    for (const auto& t : ops) {
      role.params += t.op->params;
      fp8_copies += fp8_weight_copy_bytes(spec, *t.op);
    }
    chunk.forward.clear();
    chunk.backward.clear();
    build_template(role, chunk, ops, Direction::FORWARD, shard.tensor, shard.sequence_parallel, model.layers, shared);
    build_template(role, chunk, ops, Direction::BACKWARD, shard.tensor, shard.sequence_parallel, model.layers, shared);
  }
  // With a pipeline, Megatron keeps a copy of the tied word embedding on the last stage
  // (its gradient is all-reduced with the first stage's).
  if (role.has_head() && !role.has_embedding() && model.tied_embedding)
    role.params += word_embedding_shard_params(model, program.applied.tensor);

  const StateBytes sb = state_bytes_per_param(spec);
  const double p = static_cast<double>(role.params);
  for (auto& b : role.static_bytes) b = 0;
  role.static_bytes[static_cast<int>(MemClass::WEIGHTS)] = p * sb.weights + fp8_copies;
  role.static_bytes[static_cast<int>(MemClass::GRADIENTS)] = p * sb.gradients;
  role.static_bytes[static_cast<int>(MemClass::OPTIMIZER_STATES)] = p * sb.optimizer;

  // Gradient clipping needs the global norm: each rank's squared norm (one fp32) is
  // all-reduced over the model-parallel group (Megatron-LM get_grad_norm_fp32); FP16 also
  // all-reduces the found-inf flag of its loss scaler over the same group. Only the tensor
  // group's share is modelled (a collective over the whole pipeline has no group here).
  if (program.applied.tensor > 1) {
    const int reductions = spec.dtype == hardware::Dtype::FP16 ? 2 : 1;
    for (int r = 0; r < reductions; ++r) {
      Item norm = collective_item(Dim::TENSOR, hardware::Collective::ALL_REDUCE, 4.0, static_cast<std::int32_t>(model.layers));
      static const Label NORM("tp-grad-norm-allreduce"), FOUND_INF("tp-found-inf-allreduce");
      norm.label = r == 0 ? NORM : FOUND_INF;
      norm.deps = {Dep::every_stream()};
      role.tail.push_back(std::move(norm));
    }
  }

  // The optimizer step: the memory-bound passes of optimizer_step_op over every parameter.
  Segment opt;
  opt.name = "optimizer";
  opt.ops.push_back(optimizer_step_op(spec, p, p));
  Item it;
  it.kind = Item::Kind::COMPUTE;
  it.segment = static_cast<std::uint32_t>(role.segments.size());
  it.category = Category::OPTIMIZER;
  it.layer = static_cast<std::int32_t>(model.layers);
  static const Label OPTIMIZER("optimizer");
  it.label = OPTIMIZER;
  it.deps = {Dep::every_stream()};
  // FP16's fp32 main gradients exist during the step only.
  it.mem_class = MemClass::GRADIENTS;
  it.alloc_bytes = std::llround(p * sb.main_gradients);
  it.free_bytes = it.alloc_bytes;
  role.segments.push_back(std::move(opt));
  role.tail.push_back(std::move(it));
}

namespace {

// Whether `role` holds, chunk by chunk, as many consecutive transformer layers as the middle
// stage `built` and neither the embedding nor the head: then rebuild_role would give it
// `built`'s templates with each chunk's items naming its own layers.
bool same_middle_stage(const Role& built, const Role& role) {
  if (built.chunks.size() != role.chunks.size()) return false;
  const auto consecutive = [](const Chunk& c) {
    for (std::size_t i = 1; i < c.layers.size(); ++i)
      if (c.layers[i] != c.layers[0] + static_cast<std::int32_t>(i)) return false;
    return !c.has_embedding && !c.has_head;
  };
  for (std::size_t c = 0; c < role.chunks.size(); ++c) {
    const Chunk& a = built.chunks[c];
    const Chunk& b = role.chunks[c];
    if (a.layers.size() != b.layers.size() || a.layers.empty() || !consecutive(a) || !consecutive(b)) return false;
  }
  return true;
}

// The middle stage `built` made over for the stage `shape` holds (same_middle_stage): as
// rebuild_role would make it, or as the passes left `built`, with shape's stage number and
// chunk layers, and items naming the same position in its own chunks (the embedding's −1 and
// the head's group, which the tail names in every role, stay as they are).
Role copy_for_stage(const Role& built, Role&& shape, std::int32_t num_layers) {
  std::vector<std::int32_t> to(static_cast<std::size_t>(num_layers) + 2);  // by layer + 1
  std::iota(to.begin(), to.end(), -1);
  for (std::size_t c = 0; c < built.chunks.size(); ++c)
    for (std::size_t i = 0; i < built.chunks[c].layers.size(); ++i)
      to[static_cast<std::size_t>(built.chunks[c].layers[i] + 1)] = shape.chunks[c].layers[i];
  auto rename = [&](std::vector<Item>& items) {
    for (Item& it : items)
      if (it.layer >= -1 && it.layer <= num_layers) it.layer = to[static_cast<std::size_t>(it.layer + 1)];
  };
  Role role = built;
  role.stage = shape.stage;
  for (std::size_t c = 0; c < role.chunks.size(); ++c) {
    role.chunks[c].layers = std::move(shape.chunks[c].layers);
    rename(role.chunks[c].forward);
    rename(role.chunks[c].backward);
  }
  for (auto* list : {&role.prologue, &role.floating, &role.tail, &role.transfers}) rename(*list);
  return role;
}

}  // namespace

// The middle stages of a pipeline differ only in the layers they hold: one is built and the
// others copy it (a pipeline of 32 stages has 30 of them, and building is a tenth of a
// search's evaluation).
void refresh_templates(Program& program) {
  if (!program.templates_stale) return;
  const auto num_layers = static_cast<std::int32_t>(program.spec.model.layers);
  const Role* middle = nullptr;
  for (auto& role : program.roles) {
    if (middle != nullptr && same_middle_stage(*middle, role)) {
      role = copy_for_stage(*middle, std::move(role), num_layers);
      continue;
    }
    rebuild_role(role, program);
    if (middle == nullptr && !role.has_embedding() && !role.has_head()) middle = &role;
  }
  program.templates_stale = false;
}

void elide_middle_stages(Program& program) {
  auto& roles = program.roles;
  if (!program.elided_stages.empty() || roles.size() < 4 || is_scheduled(program)) return;
  for (std::size_t r = 1; r + 1 < roles.size(); ++r)
    if (!same_middle_stage(roles[1], roles[r])) return;
  for (auto r = roles.begin() + 2; r + 1 != roles.end(); ++r) {
    Role shape;
    shape.stage = r->stage;
    shape.chunks.resize(r->chunks.size());
    for (std::size_t c = 0; c < r->chunks.size(); ++c) shape.chunks[c].layers = std::move(r->chunks[c].layers);
    program.elided_stages.push_back(std::move(shape));
  }
  roles.erase(roles.begin() + 2, roles.end() - 1);
}

void restore_middle_stages(Program& program) {
  if (program.elided_stages.empty()) return;
  refresh_templates(program);
  const auto num_layers = static_cast<std::int32_t>(program.spec.model.layers);
  std::vector<Role> restored;
  restored.reserve(program.elided_stages.size());
  for (Role& shape : program.elided_stages) restored.push_back(copy_for_stage(program.roles[1], std::move(shape), num_layers));
  // One number per restoration in the process, so that no cache keyed by it sees another
  // program's roles.
  static std::atomic<std::uint64_t> restorations{0};
  const std::uint64_t restoration = ++restorations;
  program.roles[1].restored_from = restoration;
  for (Role& role : restored) role.restored_from = restoration;
  program.roles.insert(program.roles.begin() + 2, std::make_move_iterator(restored.begin()),
                       std::make_move_iterator(restored.end()));
  program.elided_stages.clear();
}

Program initial_program(const TrainingSpec& spec, bool build_templates) {
  Program program;
  program.spec = spec;
  program.applied = Layout{};
  program.micro_batches = spec.global_batch / spec.micro_batch;
  Role role;
  role.stage = 0;
  Chunk chunk;
  chunk.layers.resize(static_cast<std::size_t>(spec.model.layers));
  std::iota(chunk.layers.begin(), chunk.layers.end(), 0);
  chunk.has_embedding = true;
  chunk.has_head = true;
  role.chunks.push_back(std::move(chunk));
  program.roles.push_back(std::move(role));
  program.templates_stale = true;
  if (build_templates) refresh_templates(program);
  return program;
}

}  // namespace trainsim::strategies
