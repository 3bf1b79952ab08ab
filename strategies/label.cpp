#include "strategies/label.hpp"

#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace trainsim::strategies {

namespace {

// The process's names; a node-based set, so an interned copy never moves.
struct Names {
  std::mutex mutex;
  std::unordered_set<std::string> names;
};

Names& names() {
  static Names n;
  return n;
}

const std::string* intern(std::string_view name) {
  // Each thread remembers the names it has met, so that only a name new to the thread takes
  // the lock (search and sweep build programs on every core at once).
  thread_local std::unordered_map<std::string_view, const std::string*> seen;
  if (const auto pos = seen.find(name); pos != seen.end()) return pos->second;
  Names& n = names();
  const std::string* text = nullptr;
  {
    const std::lock_guard<std::mutex> lock(n.mutex);
    text = &*n.names.emplace(name).first;
  }
  seen.emplace(std::string_view(*text), text);
  return text;
}

}  // namespace

Label::Label(std::string_view name) : text_(name.empty() ? nullptr : intern(name)) {}

}  // namespace trainsim::strategies
