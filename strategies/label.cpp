#include "strategies/label.hpp"

#include <mutex>
#include <unordered_map>

namespace trainsim::strategies {

namespace {

// The process's names; node-based, so an interned copy never moves.
struct Names {
  std::mutex mutex;
  std::unordered_map<std::string, Label::Interned> names;
};

Names& names() {
  static Names n;
  return n;
}

const Label::Interned* intern(std::string_view name) {
  // Each thread remembers the names it has met, so that only a name new to the thread takes
  // the lock (search and sweep build programs on every core at once).
  thread_local std::unordered_map<std::string_view, const Label::Interned*> seen;
  if (const auto pos = seen.find(name); pos != seen.end()) return pos->second;
  Names& n = names();
  const Label::Interned* interned = nullptr;
  {
    const std::lock_guard<std::mutex> lock(n.mutex);
    auto [pos, fresh] = n.names.try_emplace(std::string(name));
    if (fresh) pos->second = {pos->first, static_cast<std::uint32_t>(n.names.size())};
    interned = &pos->second;
  }
  seen.emplace(std::string_view(interned->text), interned);
  return interned;
}

}  // namespace

Label::Label(std::string_view name) : name_(name.empty() ? nullptr : intern(name)) {}

}  // namespace trainsim::strategies
