#include "sim/event_queue.hpp"

#include <cassert>
#include <cstddef>

namespace trainsim::sim {

// Both sifts move a hole instead of swapping, so each level costs one 24-byte copy.

void EventQueue::push(Time time, std::uint32_t kind, std::uint32_t payload) {
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

Event EventQueue::pop() {
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
