#pragma once
// A hash map in one array probed linearly, for the tables the schedule and the lowering build
// afresh for every Program and then read many times: a node-based map allocates a node per
// key and chases a pointer per lookup, which a search pays once per variant. Keys are never
// erased; an insertion may move every value (hold indices, not pointers, across one).
#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace trainsim::strategies::detail {

template <class Key, class Value, class Hash>
class FlatMap {
 public:
  void clear() {
    slots_.assign(MIN_SLOTS, Slot{});
    used_ = 0;
  }
  std::size_t size() const { return used_; }

  // The key's value and whether it was absent (then value-initialized).
  std::pair<Value*, bool> try_emplace(const Key& key) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    Slot& slot = probe(slots_, key);
    if (slot.used) return {&slot.value, false};
    slot.used = true;
    slot.key = key;
    ++used_;
    return {&slot.value, true};
  }
  Value& operator[](const Key& key) { return *try_emplace(key).first; }
  const Value* find(const Key& key) const {
    if (slots_.empty()) return nullptr;
    const Slot& slot = probe(slots_, key);
    return slot.used ? &slot.value : nullptr;
  }
  template <class Visit>
  void for_each(Visit&& visit) {
    for (Slot& slot : slots_)
      if (slot.used) visit(slot.key, slot.value);
  }

 private:
  static constexpr std::size_t MIN_SLOTS = 64;  // a power of two, as every size after it
  struct Slot {
    Key key{};
    Value value{};
    bool used = false;
  };
  template <class Slots>
  static auto& probe(Slots& slots, const Key& key) {
    const std::size_t mask = slots.size() - 1;
    for (std::size_t i = Hash{}(key) & mask;; i = (i + 1) & mask)
      if (!slots[i].used || slots[i].key == key) return slots[i];
  }
  void grow() {
    std::vector<Slot> old(std::max(MIN_SLOTS, 2 * slots_.size()));
    old.swap(slots_);
    for (Slot& slot : old)
      if (slot.used) probe(slots_, slot.key) = std::move(slot);
  }

  std::vector<Slot> slots_;
  std::size_t used_ = 0;
};

}  // namespace trainsim::strategies::detail
