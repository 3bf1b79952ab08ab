#pragma once
// Shared by the schedule passes: appends one micro-batch's forward or backward of one
// model chunk (with the receive/send around it), the prologue or the tail to a role's
// steps, wiring the dependencies every schedule needs. A schedule pass only decides the
// order.
#include <cstdint>
#include <vector>

#include "strategies/program.hpp"

namespace trainsim::strategies::detail {

class ScheduleBuilder {
 public:
  ScheduleBuilder(const Program& program, Role& role);
  void prologue();
  void forward(std::int32_t micro_batch, std::int32_t chunk = 0);
  void backward(std::int32_t micro_batch, std::int32_t chunk = 0);
  void tail();

 private:
  struct Peer {
    std::int32_t stage = -1, chunk = 0;
  };
  std::uint32_t add(Step step);
  void run(Direction dir, std::int32_t micro_batch, std::int32_t chunk);
  Peer upstream(Direction dir, std::int32_t chunk) const;  // who sends to this chunk

  Role& role_;
  std::int32_t stages_;
  std::int32_t chunks_;
  std::int32_t last_micro_batch_;
  double boundary_bytes_;  // activation tensor sent between stages
  std::vector<std::uint32_t> prologue_steps_;
};

}  // namespace trainsim::strategies::detail
