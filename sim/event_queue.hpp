#pragma once
// The engine's pending-event set: a binary heap of 24-byte keys (time, seq, payload).
// seq is a per-queue counter assigned at push, so events at equal times pop in the order
// they were scheduled (stable FIFO) and runs are bit-for-bit reproducible.
#include <cstdint>
#include <vector>

#include "sim/time.hpp"

namespace trainsim::sim {

struct Event {
  Time time;
  std::uint64_t seq = 0;
  std::uint32_t kind = 0;     // a closed set of kinds, dispatched by a switch in the engine
  std::uint32_t payload = 0;  // e.g. a task id
};

class EventQueue {
 public:
  void push(Time time, std::uint32_t kind, std::uint32_t payload);
  // Precondition: !empty().
  Event pop();
  const Event& top() const { return heap_.front(); }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  void reserve(std::size_t n) { heap_.reserve(n); }

 private:
  static bool earlier(const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.seq < b.seq;
  }
  std::vector<Event> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace trainsim::sim
