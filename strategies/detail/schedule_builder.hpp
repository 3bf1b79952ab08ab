#pragma once
// Shared by the schedule passes: appends the prologue, one micro-batch's forward or
// backward of one model chunk (with the receive/send around it) and the tail to a role's
// steps, then places the floating items and resolves every item's dependencies (Dep) to
// steps. A schedule pass only decides the order of the runs.
#include <cstdint>
#include <vector>

#include "strategies/program.hpp"

namespace trainsim::strategies::detail {

class ScheduleBuilder {
 public:
  ScheduleBuilder(Program& program, Role& role);
  void prologue();
  void forward(std::int32_t micro_batch, std::int32_t chunk = 0);
  void backward(std::int32_t micro_batch, std::int32_t chunk = 0);
  // Places the floating items and the tail, and resolves every dependency.
  void tail();

 private:
  struct Peer {
    std::int32_t stage = -1, chunk = 0;
  };
  struct RunRef {
    Direction dir;
    std::int32_t micro_batch, chunk;
  };
  // Appends a run's steps: its items one by one, or the whole run as one step.
  void emit_run(const RunRef& run, bool whole);
  // Which runs may be one step (ScheduleBuilder::tail).
  std::vector<bool> whole_runs() const;
  Peer upstream(Direction dir, std::int32_t chunk) const;  // who sends to this chunk

  Role& role_;
  std::vector<RunRef> runs_;  // in schedule order, emitted by tail()
  // Per template (chunk × direction): every stream its items use.
  std::vector<std::vector<std::uint8_t>> template_streams_;
  std::int32_t stages_;
  std::int32_t chunks_;
  std::int32_t micro_batches_;
  std::uint8_t pp_stream_ = 0;
  // Per step: where its list starts in the steps (a run's first item, or the list's
  // first step), and the run's receive (or none), for PREVIOUS dependencies.
  std::vector<std::uint32_t> list_begin_;
  std::vector<std::uint32_t> run_recv_;
};

}  // namespace trainsim::strategies::detail
