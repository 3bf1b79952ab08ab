#pragma once
// Where the time of one stream went: busy time by plan category, and idle gaps explained
// either by the communication the stream waited for (charged to that task's category) or
// as idle (another device's work, a rendezvous with a slower member, pipeline fill and
// drain). Reads only the Plan and the Timeline; the categories stay small integers whose
// names are Plan::category_names.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/plan.hpp"
#include "sim/simulate.hpp"
#include "sim/time.hpp"

namespace trainsim::sim {

// Tasks that fold several categories into one span (a producer's summary of work it
// simulated separately): their time is split in proportion to nominal parts.
struct FoldedParts {
  // Per task: index of its parts, or NONE. Empty: no task is folded.
  std::span<const std::uint32_t> parts_of_task;
  // Flat, category_names.size() entries per folded task: the nominal time each category
  // contributed to parts index p is parts[p * category_names.size() + c].
  std::span<const Time> parts;
};

struct StreamAttribution {
  std::vector<double> by_category_s;  // seconds per plan category (busy and exposed communication)
  double idle_s = 0;                  // gaps no communication on the wait chain explains
};

// Splits the time of (device, stream) from 0 to the makespan. Busy time is charged to the
// running task's category. An idle gap before a task is explained by walking back along
// what it waited for: the predecessor (an edge, or the previous task on the same stream)
// that ended last, then what that one waited for, and so on. Where a COMM task on that
// chain was moving data during the gap, the time is charged to its category; the rest is
// idle. The walk stays on this device except for the transfer that arrives from another
// one. After the stream's last task, the device may still wait for its own communication
// until the makespan; that tail is explained the same way from the device's last task.
StreamAttribution attribute_stream(const Plan& plan, const Timeline& timeline, std::uint32_t device,
                                   std::uint8_t stream, const FoldedParts& folded = {});

// The device whose last task ends last (the lowest id on ties): the one whose time the
// iteration time is.
std::uint32_t last_finishing_device(const Plan& plan, const Timeline& timeline);

}  // namespace trainsim::sim
