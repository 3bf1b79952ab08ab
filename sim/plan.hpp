#pragma once
// The Plan: the flat task graph that the engine executes. It knows devices, streams,
// links and byte counts, never what a layer, a GPU model or NVLink is. Stored as a
// struct of arrays with 32-bit indices and CSR successor lists, so that a plan of tens
// of millions of tasks stays compact.
//
// Execution rules (sim/simulate.cpp implements them):
//  * every task runs on one (device, stream); a stream is a FIFO in task-insertion order;
//    a task starts when it is at the head of its stream and all predecessors are done;
//  * a COMPUTE task lasts `duration`;
//  * a COMM task is one participant of a communication instance (plan.comms). The
//    instance starts when every participant task is at the head of its stream with its
//    predecessors done (a rendezvous, as NCCL collectives behave); then either it lasts
//    the instance's fixed duration, or its flows (from its pattern, scaled by its bytes)
//    are started on the network and it ends when the last flow finishes plus the
//    pattern's latency. All participants end together.
//  * a COPY task is a COMM task with one participant that moves bytes over a route of
//    links (a copy engine between GPU and host memory); it takes no SMs, so it does not
//    count as communication for contention;
//  * a task also waits for the *start* of the tasks that name it in their start-successor
//    list (start_succ): a prefetch issued when a layer starts;
//  * a COMPUTE task on the contended stream progresses 1/(1 + contention_slowdown ×
//    contention_share) as fast while communication of its device runs on another stream
//    (share < 1: a task that folds computation with communication of its own), and by
//    link_slowdown more while an instance that shares_links runs;
//  * memory: a task adds `alloc_bytes` to its device's (or, with mem_on_host, its device's
//    host's) `mem_class` when it starts and removes `free_bytes` from it when it ends.
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/time.hpp"

namespace trainsim::sim {

using TaskId = std::uint32_t;
inline constexpr std::uint32_t NONE = 0xffffffffu;

enum class TaskKind : std::uint8_t { COMPUTE, COMM, COPY };

// A flow of a communication pattern: it crosses `links` (indices into the network's
// link table) and carries bytes_per_unit × (the instance's bytes).
struct FlowTemplate {
  std::uint32_t route_begin = 0;  // into CommPattern::route_links
  std::uint32_t route_end = 0;
  double bytes_per_unit = 0.0;
};

// How one communication decomposes onto links, independent of its size. Built by the
// hardware layer's collective algorithms; shared by every instance with the same group
// and algorithm.
struct CommPattern {
  std::string name;                         // e.g. "ring-allreduce[8]", for traces
  std::vector<FlowTemplate> flows;
  std::vector<std::uint32_t> route_links;
  Time latency;                             // added after the last flow ends
};

struct CommInstance {
  std::uint32_t pattern = NONE;  // NONE: the instance lasts `fixed_duration`
  double bytes = 0.0;
  Time fixed_duration;
  std::uint32_t participants = 0;  // number of COMM tasks that rendezvous on it
  // Share of the pattern's latency this instance pays: a collective cut into k pipelined
  // pieces pays its per-step latency once in all, 1/k per piece.
  double latency_scale = 1.0;
  // Shares links with the communication that compute tasks of its devices fold in (fast
  // fidelity): while it runs, those run their link_slowdown slower.
  bool shares_links = false;
  // Its kernels run on the SMs (NCCL's, or userbuffers' pipelined and bulk kernels): while it
  // runs, compute on the contended stream of its devices slows by contention_slowdown. A
  // transfer the copy engines make (userbuffers' ring exchange) leaves the SMs to compute.
  bool occupies_sms = true;
};

// What a task is, for the readers that want more than its time (Chakra export, the
// critical-path report, calibration): kept in an optional side table so that the engine
// never pays for it. Names are the builder's words; the engine does not interpret them.
struct OpDescriptor {
  enum class Kind : std::uint8_t { COMPUTE, COLLECTIVE, SEND_RECV, COPY, FOLDED };
  Kind kind = Kind::COMPUTE;
  std::string name;        // "layer3.fwd0", "all-reduce", "copy-d2h"
  double flops = 0;        // COMPUTE, FOLDED: floating-point operations of the task's kernels
  double bytes = 0;        // COMPUTE: HBM bytes moved; COLLECTIVE, SEND_RECV, COPY: message bytes
  std::string dtype;       // "bf16"
  std::uint32_t group = 0xffffffffu;  // COLLECTIVE, SEND_RECV: index into Plan::op_groups
};

// The network the flows run on: directed links with a capacity (bytes/s).
struct NetworkSpec {
  std::vector<double> capacity_bytes_per_s;
};

struct Plan {
  std::uint32_t num_devices = 0;
  std::uint32_t streams_per_device = 2;

  // Names for the small integers the engine carries but never interprets.
  std::vector<std::string> category_names;   // what a task's time counts as (compute, tp-comm …)
  std::vector<std::string> mem_class_names;  // weights, gradients, activations …
  std::vector<std::string> label_names;      // task labels for traces ("fwd", "bwd" …)
  std::vector<std::string> stream_names;     // per stream index, the same on every device (may be empty)

  // Hosts whose memory COPY tasks fill: host_of_device[d] < num_hosts (empty: no hosts).
  std::uint32_t num_hosts = 0;
  std::vector<std::uint32_t> host_of_device;

  // Per task.
  std::vector<TaskKind> kind;
  std::vector<std::uint32_t> device;
  std::vector<std::uint8_t> stream;
  std::vector<std::uint8_t> category;
  std::vector<std::uint16_t> label;
  std::vector<std::int32_t> micro_batch;  // -1 where not applicable
  std::vector<Time> duration;             // COMPUTE only
  std::vector<std::uint32_t> comm;        // COMM only: index into comms
  std::vector<std::uint8_t> mem_class;
  std::vector<std::int64_t> alloc_bytes;  // at start
  std::vector<std::int64_t> free_bytes;   // at end
  std::vector<std::uint8_t> mem_on_host;  // 1: alloc/free go to the device's host
  std::vector<float> contention_share;    // COMPUTE: share of its work that contention slows
  // COMPUTE: further slowdown while its device communicates on another stream, for the
  // communication a task folds in that shares links with that other communication.
  std::vector<float> link_slowdown;

  // CSR successors: succ[succ_offset[t] .. succ_offset[t+1]).
  std::vector<std::uint32_t> succ_offset;
  std::vector<TaskId> succ;
  // CSR start-successors: they wait for this task to start, not to end.
  std::vector<std::uint32_t> start_succ_offset;
  std::vector<TaskId> start_succ;

  std::vector<CommInstance> comms;
  std::vector<CommPattern> patterns;

  // Optional op descriptors (empty when not asked for): op_of_task[t] indexes ops, or NONE.
  std::vector<OpDescriptor> ops;
  std::vector<std::uint32_t> op_of_task;
  std::vector<std::vector<std::uint32_t>> op_groups;  // global ranks of a collective's group

  // Contention: COMPUTE tasks on `contended_stream` run (1 + contention_slowdown) times
  // slower while any COMM task of the same device runs on another stream (communication
  // kernels take SMs and memory bandwidth from the computation they overlap).
  double contention_slowdown = 0.0;
  std::uint8_t contended_stream = 0;

  // Memory held before the first task (weights, gradients, optimizer states):
  // initial_memory[device * mem_class_names.size() + class].
  std::vector<std::int64_t> initial_memory;

  std::size_t size() const { return kind.size(); }
  std::span<const TaskId> successors(TaskId t) const {
    return {succ.data() + succ_offset[t], succ.data() + succ_offset[t + 1]};
  }
  std::span<const TaskId> start_successors(TaskId t) const {
    return {start_succ.data() + start_succ_offset[t], start_succ.data() + start_succ_offset[t + 1]};
  }
};

// Builds a Plan: tasks are appended in stream order, edges are collected as pairs and
// turned into CSR by finish().
class PlanBuilder {
 public:
  PlanBuilder(std::uint32_t num_devices, std::uint32_t streams_per_device,
              std::vector<std::string> category_names, std::vector<std::string> mem_class_names);

  std::uint16_t label(const std::string& name);  // interned
  std::uint32_t add_pattern(CommPattern pattern);
  std::uint32_t add_comm(const CommInstance& instance) {  // inline: a fast plan makes one per send
    plan_.comms.push_back(instance);
    return static_cast<std::uint32_t>(plan_.comms.size() - 1);
  }

  struct TaskSpec {
    std::uint32_t device = 0;
    std::uint8_t stream = 0;
    std::uint8_t category = 0;
    std::uint16_t label = 0;
    std::int32_t micro_batch = -1;
    std::uint8_t mem_class = 0;
    std::int64_t alloc_bytes = 0;
    std::int64_t free_bytes = 0;
    bool mem_on_host = false;
    float contention_share = 1.0f;
    float link_slowdown = 0.0f;
  };
  TaskId add_compute(const TaskSpec& spec, Time duration) { return add_task(spec, TaskKind::COMPUTE, duration, NONE); }
  TaskId add_comm_task(const TaskSpec& spec, std::uint32_t comm) {
    return add_task(spec, TaskKind::COMM, Time::zero(), comm);
  }
  // A copy over the single flow of `pattern`: a COMM-like task with one participant.
  TaskId add_copy(const TaskSpec& spec, std::uint32_t pattern, double bytes);
  // `to` waits for `from` to end (add_edge) or to start (add_start_edge). (Inline: a lowering
  // adds an edge or two per task.)
  void add_edge(TaskId from, TaskId to) { edges_.emplace_back(from, to); }
  void add_start_edge(TaskId from, TaskId to) { start_edges_.emplace_back(from, to); }
  void set_hosts(std::uint32_t num_hosts, std::vector<std::uint32_t> host_of_device);
  void set_stream_names(std::vector<std::string> names);
  // Room for this many tasks and communication instances (an estimate; more may follow).
  void reserve(std::size_t tasks, std::size_t comms);
  // Op descriptors: describe(t, op) after adding task t; ops are shared between tasks.
  std::uint32_t add_op(OpDescriptor op);
  std::uint32_t add_op_group(std::vector<std::uint32_t> ranks);
  void describe(TaskId t, std::uint32_t op);
  void set_initial_memory(std::uint32_t device, std::uint8_t mem_class, std::int64_t bytes);

  // Validates (edge ends in range, every comm has as many tasks as participants, no task
  // depends on itself) and returns the plan. Throws std::logic_error naming the problem.
  Plan finish() &&;

 private:
  TaskId add_task(const TaskSpec& spec, TaskKind k, Time duration, std::uint32_t comm);
  Plan plan_;
  std::vector<std::pair<TaskId, TaskId>> edges_;
  std::vector<std::pair<TaskId, TaskId>> start_edges_;
  std::unordered_map<std::string, std::uint16_t> label_index_;
};

}  // namespace trainsim::sim
