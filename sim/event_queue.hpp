#pragma once
// The engine's pending-event set: a binary heap of 24-byte keys (time, seq, payload).
// seq is a per-queue counter assigned at push, so events at equal times pop in the order
// they were scheduled (stable FIFO) and runs are bit-for-bit reproducible.
#include <cassert>
#include <cstddef>
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
  // Inline: the engine pushes and pops an event or two per task.
  inline void push(Time time, std::uint32_t kind, std::uint32_t payload);
  // Precondition: !empty().
  inline Event pop();
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

// Both sifts move a hole instead of swapping, so each level costs one 24-byte copy.

inline void EventQueue::push(Time time, std::uint32_t kind, std::uint32_t payload) {
  const Event e{time, next_seq_++, kind, payload};
  heap_.push_back(e);
  std::size_t i = heap_.size() - 1;
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!earlier(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

inline Event EventQueue::pop() {
  assert(!heap_.empty() && "EventQueue::pop on an empty queue");
  const Event top = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return top;
  std::size_t i = 0;
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && earlier(heap_[child + 1], heap_[child])) ++child;
    if (!earlier(heap_[child], last)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = last;
  return top;
}

}  // namespace trainsim::sim
