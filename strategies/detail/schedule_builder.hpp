#pragma once
// Shared by the schedule passes: appends one micro-batch's forward or backward (with the
// receive/send around it) or the per-iteration tail to a role's steps, wiring the
// dependencies every schedule needs. A schedule pass only decides the order.
#include <cstdint>

#include "strategies/program.hpp"

namespace trainsim::strategies::detail {

class ScheduleBuilder {
 public:
  ScheduleBuilder(const Program& program, Role& role);
  void forward(std::int32_t micro_batch);
  void backward(std::int32_t micro_batch);
  void tail();

 private:
  std::uint32_t add(Step step);
  void run(Direction dir, std::int32_t micro_batch);

  Role& role_;
  std::int32_t stages_;
  double boundary_bytes_;  // activation tensor sent between stages
};

}  // namespace trainsim::strategies::detail
