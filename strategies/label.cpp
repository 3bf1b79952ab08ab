#include "strategies/label.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace trainsim::strategies {

namespace {

// How many distinct names a process may hold: the passes use a few dozen.
constexpr std::uint32_t MAX_NAMES = 1u << 16;

// The process's names; node-based, so an interned copy never moves. Each is also listed by
// its number, in a table that is never resized, so that a Label is read without the lock.
struct Names {
  std::mutex mutex;
  std::unordered_map<std::string, std::uint32_t> numbers;
  std::array<std::atomic<const std::string*>, MAX_NAMES> texts{};
};

Names& names() {
  static Names n;
  return n;
}

std::uint32_t intern(std::string_view name) {
  // Each thread remembers the names it has met, so that only a name new to the thread takes
  // the lock (search and sweep build programs on every core at once).
  thread_local std::unordered_map<std::string_view, std::uint32_t> seen;
  if (const auto pos = seen.find(name); pos != seen.end()) return pos->second;
  Names& n = names();
  std::uint32_t id = 0;
  const std::string* text = nullptr;
  {
    const std::lock_guard<std::mutex> lock(n.mutex);
    auto [pos, fresh] = n.numbers.try_emplace(std::string(name), 0);
    if (fresh) {
      const auto next = static_cast<std::uint32_t>(n.numbers.size());
      if (next >= MAX_NAMES) {
        n.numbers.erase(pos);
        throw std::length_error("strategies::Label: more than " + std::to_string(MAX_NAMES - 1) +
                                " distinct labels in one process (\"" + std::string(name) + "\" would be the next)");
      }
      pos->second = next;
      n.texts[next].store(&pos->first, std::memory_order_release);
    }
    id = pos->second;
    text = &pos->first;
  }
  seen.emplace(std::string_view(*text), id);
  return id;
}

}  // namespace

Label::Label(std::string_view name) : id_(name.empty() ? 0 : static_cast<std::uint16_t>(intern(name))) {}

const std::string& Label::text(std::uint32_t id) { return *names().texts[id].load(std::memory_order_acquire); }

}  // namespace trainsim::strategies
