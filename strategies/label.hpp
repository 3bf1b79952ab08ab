#pragma once
// What an item is called in traces and dependencies: "fwd", "tp-all-gather",
// "dp-grad-bucket". A program holds thousands of items, which the passes copy, and a few
// dozen distinct names; so each name is stored once for the whole process (interned) and a
// Label is that name's small dense number (Label::id): copied, compared and hashed as four
// bytes (an item holds two or three labels), never allocated, and a table indexed by it can
// stand for a hash map from labels.
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

  const std::string& str() const { return id_ != 0 ? text(id_) : EMPTY; }
  bool empty() const { return id_ == 0; }
  // 0 for the empty name, else the order in which the process first met the name (from 1);
  // for lookup tables only (it may differ from run to run with the threads' order).
  std::uint32_t id() const { return id_; }

  // One number per name: equal names are the same number.
  friend bool operator==(const Label& a, const Label& b) { return a.id_ == b.id_; }
  friend bool operator==(const Label& a, const char* b) { return a.str() == b; }
  friend bool operator==(const Label& a, const std::string& b) { return a.str() == b; }
  // By name, so that anything sorted by label is sorted the same in every run.
  friend auto operator<=>(const Label& a, const Label& b) { return a.str() <=> b.str(); }
  friend std::ostream& operator<<(std::ostream& os, const Label& l) { return os << l.str(); }

  // For hash maps that are only looked up, never iterated (the number may differ from run to run).
  std::size_t identity_hash() const { return std::hash<std::uint32_t>{}(id_); }

 private:
  static const std::string& text(std::uint32_t id);  // the interned name numbered id (> 0)
  inline static const std::string EMPTY;
  // 0: the empty name. Two bytes (the table holds 65,535 names): items hold one and their
  // dependencies two, thousands of items to a template.
  std::uint16_t id_ = 0;
};

struct LabelIdentityHash {
  std::size_t operator()(const Label& l) const { return l.identity_hash(); }
};

}  // namespace trainsim::strategies
