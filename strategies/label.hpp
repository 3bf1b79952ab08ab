#pragma once
// What an item is called in traces and dependencies: "fwd", "tp-all-gather",
// "dp-grad-bucket". A program holds thousands of items, which the passes copy, and a few
// dozen distinct names; so each name is stored once for the whole process (interned) and a
// Label is a pointer to that copy: copied, compared and hashed as one word, never allocated.
// Each interned name also has a small dense number (Label::id), so that a table indexed by
// it can stand for a hash map from labels.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace trainsim::strategies {

class Label {
 public:
  Label() = default;  // the empty name
  Label(std::string_view name);                                    // NOLINT: names convert
  Label(const char* name) : Label(std::string_view(name)) {}       // NOLINT
  Label(const std::string& name) : Label(std::string_view(name)) {}  // NOLINT

  const std::string& str() const { return name_ != nullptr ? name_->text : EMPTY; }
  bool empty() const { return name_ == nullptr; }
  // 0 for the empty name, else 1 + the order in which the process first met the name; for
  // lookup tables only (it differs from run to run, like the pointer).
  std::uint32_t id() const { return name_ != nullptr ? name_->id : 0; }

  // One interned copy per name: equal names are the same pointer.
  friend bool operator==(const Label& a, const Label& b) { return a.name_ == b.name_; }
  friend bool operator==(const Label& a, const char* b) { return a.str() == b; }
  friend bool operator==(const Label& a, const std::string& b) { return a.str() == b; }
  // By name, so that anything sorted by label is sorted the same in every run.
  friend auto operator<=>(const Label& a, const Label& b) { return a.str() <=> b.str(); }
  friend std::ostream& operator<<(std::ostream& os, const Label& l) { return os << l.str(); }

  // For hash maps that are only looked up, never iterated (the pointer differs from run to run).
  std::size_t identity_hash() const { return std::hash<const void*>{}(name_); }

  struct Interned {
    std::string text;
    std::uint32_t id;
  };

 private:
  inline static const std::string EMPTY;
  const Interned* name_ = nullptr;  // the interned copy; null for the empty name
};

struct LabelIdentityHash {
  std::size_t operator()(const Label& l) const { return l.identity_hash(); }
};

}  // namespace trainsim::strategies
