#include "strategies/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainsim::strategies {
namespace {

std::string where(const Role& role, std::size_t chunk, const char* list, std::size_t item) {
  return "stage " + std::to_string(role.stage) + ", chunk " + std::to_string(chunk) + ", " + list + " item " +
         std::to_string(item);
}

std::string check_item(const Item& it, const Role& role, const std::string& at) {
  if (it.kind == Item::Kind::COMPUTE) {
    if (it.segment >= role.segments.size())
      return at + ": segment " + std::to_string(it.segment) + " is out of range (the role has " +
             std::to_string(role.segments.size()) + " segments)";
    if (!(it.fraction > 0 && it.fraction <= 1)) return at + ": fraction " + std::to_string(it.fraction) + " not in (0, 1]";
  } else if (it.kind == Item::Kind::COPY) {
    if (!std::isfinite(it.copy.bytes) || it.copy.bytes < 0)
      return at + ": copy \"" + it.label.str() + "\" has " + std::to_string(it.copy.bytes) + " bytes";
  } else if (!std::isfinite(it.collective.bytes) || it.collective.bytes < 0) {
    return at + ": collective \"" + it.label.str() + "\" has " + std::to_string(it.collective.bytes) + " bytes";
  }
  for (const Dep& d : it.deps) {
    if (d.target == Dep::Target::PREVIOUS && d.offset < 1)
      return at + ": depends on the item " + std::to_string(d.offset) + " places back (must be at least 1)";
    if (d.target == Dep::Target::ITEM && d.label.empty()) return at + ": depends on an item with no label";
  }
  if (it.alloc_bytes < 0 || it.free_bytes < 0)
    return at + ": negative alloc/free bytes (" + std::to_string(it.alloc_bytes) + "/" + std::to_string(it.free_bytes) + ")";
  return {};
}

}  // namespace

std::string verify_program(const Program& program) {
  const auto num_layers = static_cast<std::int32_t>(program.spec.model.layers);
  const std::size_t stages = program.roles.size();
  std::size_t max_chunks = 0;
  for (const auto& role : program.roles) max_chunks = std::max(max_chunks, role.chunks.size());

  for (const auto& role : program.roles) {
    for (std::size_t c = 0; c < role.chunks.size(); ++c) {
      const Chunk& chunk = role.chunks[c];
      std::int64_t balance[static_cast<int>(MemClass::COUNT)] = {};
      for (std::size_t i = 0; i < chunk.forward.size(); ++i) {
        if (auto e = check_item(chunk.forward[i], role, where(role, c, "forward", i)); !e.empty()) return e;
        balance[static_cast<int>(chunk.forward[i].mem_class)] += chunk.forward[i].alloc_bytes - chunk.forward[i].free_bytes;
      }
      for (std::size_t i = 0; i < chunk.backward.size(); ++i) {
        if (auto e = check_item(chunk.backward[i], role, where(role, c, "backward", i)); !e.empty()) return e;
        balance[static_cast<int>(chunk.backward[i].mem_class)] +=
            chunk.backward[i].alloc_bytes - chunk.backward[i].free_bytes;
      }
      for (int m = 0; m < static_cast<int>(MemClass::COUNT); ++m)
        if (balance[m] != 0)
          return "stage " + std::to_string(role.stage) + ", chunk " + std::to_string(c) + ": a micro-batch's " +
                 to_string(static_cast<MemClass>(m)) + " are not balanced: forward and backward allocate " +
                 std::to_string(balance[m]) + " bytes more than they free";
    }
    for (std::size_t i = 0; i < role.prologue.size(); ++i)
      if (auto e = check_item(role.prologue[i], role, "stage " + std::to_string(role.stage) + ", prologue item " + std::to_string(i)); !e.empty()) return e;
    for (std::size_t i = 0; i < role.floating.size(); ++i)
      if (auto e = check_item(role.floating[i], role, "stage " + std::to_string(role.stage) + ", floating item " + std::to_string(i)); !e.empty()) return e;
    for (std::size_t i = 0; i < role.tail.size(); ++i)
      if (auto e = check_item(role.tail[i], role, "stage " + std::to_string(role.stage) + ", tail item " + std::to_string(i)); !e.empty()) return e;
    for (std::size_t s = 0; s < role.steps.size(); ++s) {
      const Step& step = role.steps[s];
      const std::string at = "stage " + std::to_string(role.stage) + ", step " + std::to_string(s);
      if (step.deps_begin > step.deps_end || step.deps_end > role.step_deps.size())
        return at + ": its dependencies are outside the role's list";
      for (const StepDep& d : role.deps(step))
        if (d.step >= role.steps.size() || d.step == s)
          return at + ": depends on step " + std::to_string(d.step) + ", which is itself or not in the role";
      if (step.kind == Step::Kind::RECV) continue;
      if (step.count == 0 || step.index + step.count > role.list(step.list, step.chunk).size())
        return at + ": names items that do not exist";
      if (step.kind == Step::Kind::ITEM)
        for (const Item& it : role.items(step))
          if (auto e = check_item(it, role, at); !e.empty()) return e;
      if (step.kind == Step::Kind::SEND &&
          (!std::isfinite(role.item(step).collective.bytes) || role.item(step).collective.bytes < 0))
        return at + ": a send of " + std::to_string(role.item(step).collective.bytes) + " bytes";
    }
  }

  // Layers in virtual-stage order (chunk c of stage s is virtual stage c·p + s).
  std::int32_t next = 0;
  const std::size_t virtual_stages = stages * max_chunks;
  for (std::size_t vs = 0; vs < virtual_stages; ++vs) {
    const Role& role = program.roles[vs % stages];
    const std::size_t c = vs / stages;
    if (c >= role.chunks.size()) return "stage " + std::to_string(role.stage) + " has fewer chunks than the others";
    const Chunk& chunk = role.chunks[c];
    if (chunk.has_embedding != (vs == 0))
      return "stage " + std::to_string(role.stage) + ", chunk " + std::to_string(c) +
             (vs == 0 ? ": the first virtual stage lacks the embedding" : ": holds the embedding but is not the first virtual stage");
    if (chunk.has_head != (vs + 1 == virtual_stages))
      return "stage " + std::to_string(role.stage) + ", chunk " + std::to_string(c) +
             (vs + 1 == virtual_stages ? ": the last virtual stage lacks the head" : ": holds the head but is not the last virtual stage");
    for (std::int32_t l : chunk.layers) {
      if (l != next)
        return "stage " + std::to_string(role.stage) + ", chunk " + std::to_string(c) + ": holds layer " +
               std::to_string(l) + " where layer " + std::to_string(next) +
               " comes next (chunks must hold disjoint runs of layers covering the model in order)";
      ++next;
    }
  }
  if (next != num_layers)
    return "the chunks hold " + std::to_string(next) + " layers, the model has " + std::to_string(num_layers);
  return {};
}

}  // namespace trainsim::strategies
