#pragma once
// Shared by the schedule passes: appends the prologue, one micro-batch's forward or
// backward of one model chunk (with the receive/send around it) and the tail to a role's
// steps, then places the floating items and resolves every item's dependencies (Dep) to
// steps. A schedule pass only decides the order of the runs.
#include <cstdint>
#include <memory>
#include <vector>

#include "strategies/program.hpp"

namespace trainsim::strategies::detail {

class ScheduleBuilder {
 public:
  ScheduleBuilder(Program& program, Role& role);
  void prologue();
  void forward(std::int32_t micro_batch, std::int32_t chunk = 0);
  void backward(std::int32_t micro_batch, std::int32_t chunk = 0);
  // A forward and a backward whose transfers are one batch after both (Megatron-LM's
  // interleaved schedule): both runs' receives are posted before the forward, both sends
  // follow the backward.
  void forward_backward(std::int32_t fwd_mb, std::int32_t fwd_chunk, std::int32_t bwd_mb, std::int32_t bwd_chunk);
  // Places the floating items and the tail, and resolves every dependency.
  void tail();
  // One run of a template, in schedule order.
  struct RunRef {
    Direction dir;
    std::int32_t micro_batch, chunk;
    bool batched_with_next = false;  // forward_backward's forward
    bool operator==(const RunRef&) const = default;
  };

 private:
  struct Peer {
    std::int32_t stage = -1, chunk = 0;
  };
  // The steps of the stage before this one when it is alike (Role::restored_from) and ran the same
  // runs in the same order: copied, its peers one stage on (ScheduleBuilder::tail).
  bool copy_previous_stage();
  // Appends a run's receive (the step, or none on the first stage), its steps (the whole
  // run as one step, or its pieces between the cuts; returns the last, or none) and its send.
  std::uint32_t emit_recv(const RunRef& run);
  std::uint32_t emit_body(const RunRef& run, bool whole, std::uint32_t recv);
  void emit_send(const RunRef& run, std::uint32_t last, std::uint32_t recv);
  // What tail() derives from the role's lists alone, shared by roles whose lists are alike
  // (Role::restored_from).
  struct Analysis;
  static std::shared_ptr<Analysis> analysis_of(const Role& role);
  // Which runs may be one step (ScheduleBuilder::tail).
  std::vector<bool> whole_runs() const;
  // Per template (chunk × direction), where a run that cannot be one step must be cut
  // (ScheduleBuilder::find_cuts), into the analysis.
  void find_cuts();
  Peer upstream(Direction dir, std::int32_t chunk) const;  // who sends to this chunk

  Role& role_;
  std::vector<RunRef> runs_;  // in schedule order, emitted by tail()
  std::shared_ptr<Analysis> analysis_;  // set by tail()
  std::int32_t stages_;
  std::int32_t chunks_;
  std::int32_t micro_batches_;
  std::uint8_t send_stream_[2] = {};  // pipeline sends, by Direction
  std::uint8_t recv_stream_[2] = {};  // pipeline receives, by Direction
  // Per step: where its list starts in the steps (a run's first item, or the list's
  // first step), and the run's receive (or none), for PREVIOUS dependencies.
  // (A piece of a run keeps in list_begin_ where its run's items start in item_step_, the
  // step that runs each item.)
  std::vector<std::uint32_t> list_begin_;
  std::vector<std::uint32_t> run_recv_;
  std::vector<std::uint32_t> item_step_;
};

}  // namespace trainsim::strategies::detail
