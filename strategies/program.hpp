#pragma once
// The Program: what strategy passes work on. One Role per distinct rank role (a pipeline
// stage of a replica; every rank of a stage runs the same role). A role holds the
// per-micro-batch templates (forward and backward items: compute segments and the
// collectives between them), then, once a schedule pass has run, the ordered steps of
// its streams for a whole iteration. `lower` expands roles to ranks and emits the Plan.
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/collectives.hpp"
#include "models/model.hpp"
#include "strategies/spec.hpp"

namespace trainsim::strategies {

// What a span of time counts as in the report (the Plan's task categories).
enum class Category : std::uint8_t { COMPUTE, RECOMPUTE, OPTIMIZER, TP_COMM, DP_COMM, PP_COMM, COUNT };
const char* to_string(Category c);

// Tensor classes tracked by the memory model (the Plan's memory classes).
enum class MemClass : std::uint8_t { WEIGHTS, GRADIENTS, OPTIMIZER_STATES, ACTIVATIONS, COMM_BUFFERS, COUNT };
const char* to_string(MemClass c);

enum class Direction : std::uint8_t { FORWARD, BACKWARD };
// Each kind of communication has its own stream (its own NCCL communicator and CUDA
// stream), so a gradient bucket never queues behind a pipeline send.
enum class Stream : std::uint8_t { COMPUTE = 0, TP_COMM = 1, DP_COMM = 2, PP_COMM = 3 };
inline constexpr std::uint32_t STREAMS_PER_DEVICE = 4;

// Consecutive ops of one layer that run without communication between them.
struct Segment {
  std::string name;     // "layer.attn", "embedding" …
  std::vector<models::Op> ops;
};

// The parallel dimension a collective runs over.
enum class Dim : std::uint8_t { TENSOR, DATA, PIPELINE };

struct CollectiveNeed {
  Dim dim = Dim::TENSOR;
  hardware::Collective op = hardware::Collective::ALL_REDUCE;
  double bytes = 0;  // whole buffer (formulas.md convention)
  double latency_scale = 1.0;  // share of the per-step latency it pays (pipelined pieces)
};

// One element of a per-micro-batch template (or of the per-iteration tail).
struct Item {
  enum class Kind : std::uint8_t { COMPUTE, COLLECTIVE };
  Kind kind = Kind::COMPUTE;
  std::uint32_t segment = 0;       // COMPUTE: index into Role::segments
  Direction cost = Direction::FORWARD;  // COMPUTE: which of the segment's costs it pays
  double fraction = 1.0;           // COMPUTE: share of the segment's cost (a GEMM cut into chunks)
  CollectiveNeed collective;       // COLLECTIVE
  Category category = Category::COMPUTE;
  Stream stream = Stream::COMPUTE;
  std::int32_t layer = -1;         // model layer (−1 embedding, num_layers head and tail)
  MemClass mem_class = MemClass::ACTIVATIONS;
  std::int64_t alloc_bytes = 0;    // at start
  std::int64_t free_bytes = 0;     // at end
  std::string label;               // for traces: "fwd", "bwd", "recompute", "tp-allreduce" …
  // Whether the step waits for the item before it in the template. Items on the same
  // stream are ordered anyway; a compute chunk that runs while the previous chunk's
  // collective is in flight does not wait for that collective.
  bool after_previous = true;
  // Overlapped gradient reduction: in the last micro-batch only, this data-parallel
  // collective is issued on the comm stream as soon as the item ends.
  bool has_bucket = false;
  CollectiveNeed bucket;
  // Overlapped parameter gather: in the first micro-batch only, the item waits for this
  // entry of Role::prologue.
  std::int32_t waits_for_prologue = -1;
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

// One entry of a stream's ordered list for the whole iteration.
struct Step {
  enum class Kind : std::uint8_t {
    ITEM,  // an Item of a template (micro_batch ≥ 0), of the prologue or tail (micro_batch −1)
    SEND,  // activations (forward) or their gradients (backward) to (peer_stage, peer_chunk)
    RECV,  // marker: steps that depend on it wait for (peer_stage, peer_chunk)'s matching SEND
  };
  Kind kind = Kind::ITEM;
  Item item;                       // ITEM; SEND uses item.collective.bytes, stream, label
  Direction direction = Direction::FORWARD;  // which template the step came from
  std::int32_t micro_batch = -1;
  std::int32_t chunk = 0;          // the model chunk of this stage the step belongs to
  std::int32_t peer_stage = -1;    // SEND, RECV
  std::int32_t peer_chunk = 0;     // SEND, RECV
  std::vector<std::uint32_t> deps; // earlier steps of this role that must end first
};

struct Role {
  std::int32_t stage = 0;
  std::vector<Chunk> chunks;
  std::vector<Segment> segments;
  std::vector<Item> prologue;  // once per iteration before the first forward (parameter gathers)
  std::vector<Item> tail;      // once per iteration after the last backward (gradient sync, optimizer)
  std::int64_t params = 0;     // parameters held by one rank of this role
  double static_bytes[static_cast<int>(MemClass::COUNT)] = {};  // held for the whole iteration
  std::vector<Step> steps;     // filled by the schedule pass

  bool has_embedding() const;
  bool has_head() const;
  std::int64_t num_layers() const;
};

struct Program {
  TrainingSpec spec;
  Layout applied;                  // the parallel layout the passes have applied so far
  std::int64_t micro_batches = 1;  // per pipeline per iteration
  std::vector<Role> roles;         // one per pipeline stage
  std::vector<std::string> passes_run;  // pass pipeline as run, e.g. "tensor(8)", "1f1b"

  // "tensor(8),pipeline(16),data(8),1f1b": echoed in every output.
  std::string pipeline_string() const;
};

// The program before any pass: one role holding the whole model (embedding, every layer,
// head) for one rank with no parallelism; forward and backward templates of compute
// items only; model states sized from the spec's precision and optimizer.
Program initial_program(const TrainingSpec& spec);

// Bytes per parameter of each model-state class, given the spec (precision, optimizer).
struct StateBytes {
  double weights = 2, gradients = 4, optimizer = 12;
};
StateBytes state_bytes_per_param(const TrainingSpec& spec);

// Rebuilds a role's segments, chunk templates, tail and model states from its chunks'
// layer assignment and the layout applied so far (tensor degree, sequence parallelism).
// Layout passes call it after changing what a role holds.
void rebuild_role(Role& role, const Program& program);

// Activation bytes a segment's ops save for backward (only the selective-recompute ops'
// share when selective_only).
std::int64_t activation_bytes(const Segment& segment, bool selective_only = false);

// Whether the program already has a schedule (steps); passes that reshape templates must
// run before it.
bool is_scheduled(const Program& program);

}  // namespace trainsim::strategies
