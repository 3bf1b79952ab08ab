#pragma once
// The Program: what strategy passes work on. One Role per distinct rank role (a pipeline
// stage of a replica; every rank of a stage runs the same role). A role holds the
// per-micro-batch templates (forward and backward items: compute segments and the
// collectives between them), then, once a schedule pass has run, the ordered steps of
// its streams for a whole iteration. `lower` expands roles to ranks and emits the Plan.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hardware/collectives.hpp"
#include "models/model.hpp"
#include "strategies/label.hpp"
#include "strategies/spec.hpp"

namespace trainsim::strategies {

// What a span of time counts as in the report (the Plan's task categories).
enum class Category : std::uint8_t { COMPUTE, RECOMPUTE, OPTIMIZER, TP_COMM, DP_COMM, PP_COMM, COUNT };
const char* to_string(Category c);

// Tensor classes tracked by the memory model (the Plan's memory classes).
// COMM_BUFFERS: NCCL's staging buffers; CUDA_CONTEXT and CUBLAS_WORKSPACE: what the runtime
// holds besides tensors (the lowering sizes these three from the cost profile).
enum class MemClass : std::uint8_t {
  WEIGHTS, GRADIENTS, OPTIMIZER_STATES, ACTIVATIONS, COMM_BUFFERS, CUDA_CONTEXT, CUBLAS_WORKSPACE, COUNT
};
const char* to_string(MemClass c);

enum class Direction : std::uint8_t { FORWARD, BACKWARD };
// Which of a segment's costs a compute item pays: its forward, its whole backward, or one
// half of a split backward (input gradients B, weight gradients W; zero-bubble schedules
// run them apart).
enum class Cost : std::uint8_t { FORWARD, BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT };
// How many values Cost has: tables indexed by (segment, cost) use segment · COST_KINDS + cost.
inline constexpr std::size_t COST_KINDS = 4;

// Streams are declared by the passes that use them (Program::stream); the compute stream
// is always there, first.
inline constexpr std::uint8_t COMPUTE_STREAM = 0;

// Consecutive ops of one layer that run without communication between them. The identical
// layers of a role share their segments: the k-th segment of every transformer layer is one
// Segment, which its items reference by index (each item says which layer it runs).
struct Segment {
  std::string name;     // "optimizer"; for a layer's segment, what follows its layer's name: "fwd0"
  std::vector<models::Op> ops;
  bool of_layer = false;  // `name` is prefixed by the item's layer group ("layer12.fwd0")
};

// A role's segments, shared by the copies of a role until one of them changes them: the
// middle stages that restore_middle_stages makes from stage 1 hold stage 1's segments (a
// segment's ops are a few hundred bytes each, and copying them was most of a restored
// stage's copy). Reads through a const role share; anything through a non-const one (its
// operator[], begin, end, push_back, clear, assign) first makes the segments its own.
class Segments {
 public:
  std::size_t size() const { return all_ ? all_->size() : 0; }
  bool empty() const { return size() == 0; }
  const Segment& operator[](std::size_t i) const { return (*all_)[i]; }
  Segment& operator[](std::size_t i) { return own()[i]; }
  const Segment* begin() const { return all_ ? all_->data() : nullptr; }
  const Segment* end() const { return all_ ? all_->data() + all_->size() : nullptr; }
  Segment* begin() { return own().data(); }
  Segment* end() { return own().data() + own().size(); }
  void push_back(Segment s) { own().push_back(std::move(s)); }
  void clear() { all_.reset(); }
  void assign(std::size_t n, const Segment& s) { own().assign(n, s); }
  // Whether both hold the very same segments (not copies that may have been changed).
  bool same_as(const Segments& o) const { return all_ == o.all_; }

 private:
  std::vector<Segment>& own() {
    if (!all_) all_ = std::make_shared<std::vector<Segment>>();
    else if (all_.use_count() > 1) all_ = std::make_shared<std::vector<Segment>>(*all_);
    return *all_;
  }
  std::shared_ptr<std::vector<Segment>> all_;  // null when there are none
};

// The parallel dimension a collective runs over.
enum class Dim : std::uint8_t { TENSOR, DATA, PIPELINE };

struct CollectiveNeed {
  CollectiveNeed() = default;
  CollectiveNeed(Dim d, hardware::Collective o, double b) : dim(d), op(o), bytes(b) {}

  Dim dim = Dim::TENSOR;
  hardware::Collective op = hardware::Collective::ALL_REDUCE;
  // Runs kernels on the SMs, slowing compute beside it (sim::CommInstance::occupies_sms);
  // false: the copy engines move it. (Beside the other small fields: an item holds one.)
  bool occupies_sms = true;
  double bytes = 0;  // whole buffer (formulas.md convention)
  double latency_scale = 1.0;  // share of the per-step latency it pays (pipelined pieces)
};

// Bytes a copy engine moves between the GPU and its host's memory.
struct CopyNeed {
  enum class Way : std::uint8_t { DEVICE_TO_HOST, HOST_TO_DEVICE };
  Way way = Way::DEVICE_TO_HOST;
  double bytes = 0;
};

// What an item waits for, in the Program's own terms; the schedule pass resolves it to
// steps once it has placed every item (ScheduleBuilder::finish). An item starts when every
// item it depends on has started (START) or ended (END). Targets that do not exist (layer
// l − d below the first layer of the chunk) are no dependency.
struct Dep {
  enum class On : std::uint8_t { END, START };
  enum class Target : std::uint8_t {
    PREVIOUS,     // the item `offset` places earlier in the same list; before a
                  // per-micro-batch template's first item, the run's receive
    ITEM,         // the item(s) labelled `label` of layer own + `layer_offset`
    EVERY_STREAM, // the last step placed before this one on every stream (the tail)
  };
  // Which micro-batch an ITEM target belongs to.
  enum class MicroBatch : std::uint8_t {
    SAME,       // own micro-batch + `micro_batch_offset`, in the `direction` template
    EVERY,      // every micro-batch's, in the `direction` template (the last accumulation)
    ITERATION,  // a once-per-iteration item (prologue, floating, tail)
  };
  // (Ordered by size: an item holds one in place, and templates hold thousands of items.)
  Target target = Target::PREVIOUS;
  On on = On::END;
  MicroBatch micro_batch = MicroBatch::SAME;
  Direction direction = Direction::FORWARD;
  // Two bytes each (an item holds two Deps in place): Dep::previous and Dep::item refuse
  // what they cannot hold.
  std::int16_t offset = 1;  // PREVIOUS
  std::int16_t layer_offset = 0;
  std::int16_t micro_batch_offset = 0;
  Label label;              // ITEM

  static Dep previous(std::int32_t k = 1, On on = On::END) {
    Dep d;
    d.offset = narrow_offset(k);
    d.on = on;
    return d;
  }
  static Dep item(Label label, Direction dir, std::int32_t layer_offset = 0, On on = On::END,
                  MicroBatch mb = MicroBatch::SAME, std::int32_t micro_batch_offset = 0) {
    Dep d;
    d.target = Target::ITEM;
    d.label = label;
    d.direction = dir;
    d.layer_offset = narrow_offset(layer_offset);
    d.on = on;
    d.micro_batch = mb;
    d.micro_batch_offset = narrow_offset(micro_batch_offset);
    return d;
  }
  static Dep iteration_item(Label label, std::int32_t layer_offset = 0, On on = On::END) {
    Dep d = item(label, Direction::FORWARD, layer_offset, on, MicroBatch::ITERATION);
    return d;
  }
  // `offset` as the two bytes a Dep keeps; an error beyond them.
  static std::int16_t narrow_offset(std::int32_t offset) {
    if (offset < INT16_MIN || offset > INT16_MAX) offset_too_far(offset);
    return static_cast<std::int16_t>(offset);
  }
  [[noreturn]] static void offset_too_far(std::int32_t offset);
  static Dep every_stream() {
    Dep d;
    d.target = Target::EVERY_STREAM;
    return d;
  }
};

// What an item waits for besides its stream's order, kept in place so that an Item is
// trivially copyable (a template holds thousands of items, which the passes copy by the
// vector). Two is the most any registered pass gives an item: a weight-gradient chunk waits
// for its GEMM and the collective before it, a layer's first GEMM chunk for the collective
// and the layer's parameter gather (every order of the passes, tests/strategies/passes_test).
// A pass that needs more gets an error naming the limit.
class DepList {
 public:
  static constexpr std::size_t MAX_DEPS = 2;
  DepList() = default;
  DepList(Dep d) : deps_{d}, size_(1) {}  // NOLINT: one dependency converts
  DepList(std::initializer_list<Dep> deps) { assign(deps); }
  DepList& operator=(std::initializer_list<Dep> deps) {
    assign(deps);
    return *this;
  }
  void push_back(Dep d) {
    if (size_ == MAX_DEPS) too_many();
    deps_[size_++] = d;
  }
  void clear() { size_ = 0; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Dep* begin() const { return deps_.data(); }
  const Dep* end() const { return deps_.data() + size_; }
  Dep* begin() { return deps_.data(); }
  Dep* end() { return deps_.data() + size_; }

 private:
  void assign(std::initializer_list<Dep> deps) {
    clear();
    for (const Dep& d : deps) push_back(d);
  }
  [[noreturn]] static void too_many();
  std::array<Dep, MAX_DEPS> deps_{};
  std::uint16_t size_ = 0;
};

// One element of a per-micro-batch template or of a once-per-iteration list.
struct Item {
  enum class Kind : std::uint8_t { COMPUTE, COLLECTIVE, COPY };
  // (Ordered so that the small fields pack: the passes copy items by the thousand.)
  Kind kind = Kind::COMPUTE;
  Cost cost = Cost::FORWARD;       // COMPUTE: which of the segment's costs it pays
  Category category = Category::COMPUTE;
  std::uint8_t stream = COMPUTE_STREAM;  // declared with Program::stream
  std::uint32_t segment = 0;       // COMPUTE: index into Role::segments
  MemClass mem_class = MemClass::ACTIVATIONS;
  bool host_memory = false;        // alloc/free land in the host's memory, not the GPU's
  Label label;                     // what it is, for traces and dependencies: "fwd", "bwd" …
  std::int32_t layer = -1;         // model layer (−1 embedding, num_layers head and tail)
  double fraction = 1.0;           // COMPUTE: share of the segment's cost (a GEMM cut into chunks)
  CollectiveNeed collective;       // COLLECTIVE
  CopyNeed copy;                   // COPY
  std::int64_t alloc_bytes = 0;    // at start
  std::int64_t free_bytes = 0;     // at end
  // What it waits for besides its stream's previous step: by default the item before it
  // (in a template, the run's receive for the first item); passes rewire.
  DepList deps = Dep::previous();
};

// A model chunk: the contiguous layers a stage runs for one virtual stage. Without
// interleaving a stage has one chunk.
struct Chunk {
  std::vector<std::int32_t> layers;
  bool has_embedding = false;
  bool has_head = false;
  std::vector<Item> forward;   // per micro-batch, in execution order
  std::vector<Item> backward;  // per micro-batch, in execution order
};

// Where a step's item lives.
enum class ItemList : std::uint8_t { FORWARD, BACKWARD, PROLOGUE, FLOATING, TAIL, TRANSFER };

// A resolved dependency of a step: an earlier or later step of the same role.
struct StepDep {
  std::uint32_t step = 0;
  Dep::On on = Dep::On::END;
  bool operator==(const StepDep&) const = default;
};

// One entry of the role's ordered work for the whole iteration. Steps of one stream run in
// the order they appear.
struct Step {
  enum class Kind : std::uint8_t {
    ITEM,  // an item of a template (micro_batch ≥ 0) or of a per-iteration list (−1)
    SEND,  // activations (forward) or their gradients (backward) to (peer_stage, peer_chunk)
    RECV,  // the receive of (peer_stage, peer_chunk)'s matching SEND: one rendezvous with it
  };
  Kind kind = Kind::ITEM;
  ItemList list = ItemList::FORWARD;  // ITEM; SEND and RECV: TRANSFER
  std::uint32_t index = 0;            // into that list
  // ITEM: how many consecutive items of the list the step runs. A whole template run is one
  // step (index 0, count = the template's size) when nothing outside the run refers to its
  // items and they wait for nothing outside it but the run's receive: its items' own
  // dependencies are the template's (Item::deps, all PREVIOUS within the run). Any other run
  // goes in pieces: a piece's first item waits for what is outside it (Role::deps), the others
  // only for the piece's items or for what an earlier item of their stream already waited
  // for; only its first item is waited for to start and only its last to end.
  std::uint32_t count = 1;
  bool whole_run = false;  // ITEM: the step is a whole template run (see count)
  Direction direction = Direction::FORWARD;  // which template the step came from
  std::int32_t micro_batch = -1;
  std::int32_t chunk = 0;          // the model chunk of this stage the step belongs to
  std::int32_t peer_stage = -1;    // SEND, RECV
  std::int32_t peer_chunk = 0;     // SEND, RECV
  // Resolved by the schedule: Role::step_deps[deps_begin, deps_end).
  std::uint32_t deps_begin = 0, deps_end = 0;
};

struct Role {
  std::int32_t stage = 0;
  std::vector<Chunk> chunks;
  Segments segments;
  std::vector<Item> prologue;  // once per iteration, first on their streams (parameter gathers)
  // Once per iteration, each placed on its stream right after the last step it depends on
  // (a gradient bucket after the last accumulation of its gradients).
  std::vector<Item> floating;
  std::vector<Item> tail;      // once per iteration after everything else (gradient sync, optimizer)
  std::vector<Item> transfers; // the schedule's sends between stages by Direction, then the receives
  std::int64_t params = 0;     // parameters held by one rank of this role
  double static_bytes[static_cast<int>(MemClass::COUNT)] = {};  // held for the whole iteration
  // The same number on stage 1 and on the middle stages restore_middle_stages made as its
  // copies (one number per restoration): their lists are stage 1's but for the layers their
  // items name, so the schedule derives what depends on the lists once, and a lowering of
  // the Program as built compares only their prices (LowerOptions::as_built). build_program
  // clears it when a pass ran after the schedule; a caller that edits a role's lists clears
  // that role's.
  std::uint64_t restored_from = 0;
  std::vector<Step> steps;     // filled by the schedule pass
  std::vector<StepDep> step_deps;  // what each step waits for (Step::deps_begin/deps_end)

  bool has_embedding() const;
  bool has_head() const;
  std::int64_t num_layers() const;
  // Inline: the schedule and the lowering look a step's list up for every step.
  const std::vector<Item>& list(ItemList which, std::int32_t chunk) const {
    switch (which) {
      case ItemList::FORWARD: return chunks[static_cast<std::size_t>(chunk)].forward;
      case ItemList::BACKWARD: return chunks[static_cast<std::size_t>(chunk)].backward;
      case ItemList::PROLOGUE: return prologue;
      case ItemList::FLOATING: return floating;
      case ItemList::TAIL: return tail;
      case ItemList::TRANSFER: return transfers;
    }
    return tail;
  }
  std::vector<Item>& list(ItemList which, std::int32_t chunk) {
    return const_cast<std::vector<Item>&>(static_cast<const Role&>(*this).list(which, chunk));
  }
  // The item a step runs (ITEM and SEND steps).
  const Item& item(const Step& step) const { return list(step.list, step.chunk)[step.index]; }
  // The items a step runs (one, or a whole template run).
  std::span<const Item> items(const Step& step) const {
    const auto& l = list(step.list, step.chunk);
    return {l.data() + step.index, step.kind == Step::Kind::RECV ? 0u : step.count};
  }
  // Items the steps run, summed: the tasks one rank of this role becomes in full fidelity.
  std::size_t item_steps() const;
  std::span<const StepDep> deps(const Step& step) const {
    return {step_deps.data() + step.deps_begin, step_deps.data() + step.deps_end};
  }
};

struct Program {
  TrainingSpec spec;
  Layout applied;                  // the parallel layout the passes have applied so far
  std::int64_t micro_batches = 1;  // per pipeline per iteration
  std::vector<Role> roles;         // one per pipeline stage
  std::vector<std::string> passes_run;  // pass pipeline as run, e.g. "tensor(8)", "1f1b"
  // Streams every rank has, declared by the passes that put work on them; the compute
  // stream is always first.
  std::vector<std::string> streams = {"compute"};
  // The roles' templates predate the layout applied: a layout pass changed it and left the
  // rebuilding to refresh_templates, which build_program calls before any pass that reads
  // them (a pass pipeline's layout passes would otherwise rebuild the whole model in turn).
  bool templates_stale = false;
  // A pipeline's middle stages 2 … p − 2 while the passes before the schedule run, when each
  // holds what stage 1 holds but for its layers (elide_middle_stages): each keeps only its
  // stage and its chunks' layers, and roles holds stages 0, 1 and p − 1.
  std::vector<Role> elided_stages;

  // The stream named `name`, declared on first use.
  std::uint8_t stream(const std::string& name);

  // "tensor(8),pipeline(16),data(8),1f1b": echoed in every output.
  std::string pipeline_string() const;
};

// The program before any pass: one role holding the whole model (embedding, every layer,
// head) for one rank with no parallelism; forward and backward templates of compute
// items only; model states sized from the spec's precision and optimizer.
// With build_templates false the role holds only its layers, and templates_stale is set.
Program initial_program(const TrainingSpec& spec, bool build_templates = true);

// Bytes per parameter of each model-state class, given the spec (precision, optimizer).
// `gradients` is the buffer backward accumulates into and data parallelism reduces;
// `main_gradients` the fp32 copies an FP16 optimizer step makes of it, alive only during
// the step.
struct StateBytes {
  double weights = 2, gradients = 4, optimizer = 12, main_gradients = 0;
};
StateBytes state_bytes_per_param(const TrainingSpec& spec);
// What an op's weight holds besides its model states: under FP8, Transformer Engine's FP8
// cast of a linear layer's weight (k × n, not the bias) and that cast's transpose for the
// input-gradient GEMM, 1 byte each; nothing otherwise.
double fp8_weight_copy_bytes(const TrainingSpec& spec, const models::Op& op);
// The parameters of a GPU's shard of the word embedding (its vocabulary split over the tensor
// group): what the last stage of a pipeline holds of a tied embedding's copy.
std::int64_t word_embedding_shard_params(const models::ModelConfig& model, std::int64_t tensor);

// The optimizer step on `params` parameters (a ZeRO shard or all of a stage's) as the
// memory-bound passes Megatron-LM makes; `buffer_params` are the parameters whose gradient
// buffer is zeroed for the next iteration (all of the stage's, sharded or not).
models::Op optimizer_step_op(const TrainingSpec& spec, double params, double buffer_params);
// HBM bytes per parameter of the sharded passes of that step (optimizer_step_op's comment).
double optimizer_step_bytes_per_param(const TrainingSpec& spec);

// The shard of a layer that every role of the Program holds (the applied tensor size and
// sequence parallelism, the spec's micro-batch and attention kernel).
models::ShardSpec layer_shard(const Program& program);
// The same for a spec whose layout is applied as written (bounds computed before a build).
models::ShardSpec layer_shard(const TrainingSpec& spec, std::int64_t tensor, bool sequence_parallel);
// Rebuilds a role's segments, chunk templates, tail and model states from its chunks'
// layer assignment and the layout applied so far (tensor degree, sequence parallelism).
// Layout passes call it after changing what a role holds.
void rebuild_role(Role& role, const Program& program);
// Rebuilds every role when templates_stale is set, and clears it.
void refresh_templates(Program& program);

// The passes before the schedule treat a role by what it holds, never by its stage, so the
// middle stages of a pipeline — each holding, chunk by chunk, as many consecutive layers as
// stage 1 and neither the embedding nor the head — need only stage 1 built and transformed:
// elide_middle_stages takes stages 2 … p − 2 out of the program (a no-op when they differ,
// or once scheduled), restore_middle_stages puts them back as copies of stage 1 whose items
// name their own layers. A schedule pass needs them all (build_program restores first).
void elide_middle_stages(Program& program);
void restore_middle_stages(Program& program);

// The label of a layer's compute items in each direction ("fwd", "bwd"): the templates'
// builder gives it, and a pass that finds a layer's compute by it names it so.
const Label& compute_label(Direction dir);

// What a compute item's segment is called in traces: "layer12.fwd0", "embedding.bwd1",
// "optimizer".
std::string segment_name(const Program& program, const Role& role, const Item& item);

// Activation bytes a segment's ops save for backward (only the selective-recompute ops'
// share when selective_only).
std::int64_t activation_bytes(const Segment& segment, bool selective_only = false);

// Whether the program already has a schedule (steps); passes that reshape templates must
// run before it.
bool is_scheduled(const Program& program);

// Whether two lists of items are the same item for item but for the layers they name: what a
// chunk's identical layers make, which a pass or a fold may treat once for all of them.
bool alike_but_layer(std::span<const Item> a, std::span<const Item> b);

// The end of the block of items that name the layer items[begin] names: a chunk's templates
// run layer by layer.
inline std::size_t layer_block_end(std::span<const Item> items, std::size_t begin) {
  std::size_t end = begin + 1;
  while (end < items.size() && items[end].layer == items[begin].layer) ++end;
  return end;
}

// The kinds of layer block met last in a list of items, for a pass or a fold that treats
// each kind once: a block alike to a kind (alike_but_layer) is treated as that kind's was.
// A few are kept, the oldest replaced: recompute in segments makes a segment's first layer a
// kind of its own. `Kind` holds its latest block's `begin` and `size`, and what the caller
// keeps of it.
template <class Kind, std::size_t N = 4>
class LayerKinds {
 public:
  // The kind the block [begin, begin + size) of `items` is alike to, which now stands at that
  // block; null when none is.
  Kind* find(std::span<const Item> items, std::size_t begin, std::size_t size) {
    for (std::size_t k = 0; k < met_ && k < N; ++k)
      if (alike_but_layer(items.subspan(kinds_[k].begin, kinds_[k].size), items.subspan(begin, size))) {
        kinds_[k].begin = begin;
        return &kinds_[k];
      }
    return nullptr;
  }
  void keep(const Kind& kind) { kinds_[met_++ % N] = kind; }
  // A kind's place among those kept (how a record names it).
  std::size_t slot(const Kind* kind) const { return static_cast<std::size_t>(kind - kinds_.data()); }
  const Kind& at(std::size_t slot) const { return kinds_[slot]; }

 private:
  std::array<Kind, N> kinds_{};
  std::size_t met_ = 0;
};

}  // namespace trainsim::strategies
