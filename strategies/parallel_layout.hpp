#pragma once
// The parallel layout as data: an ordered list of dimensions (tensor, context, expert,
// data, pipeline) with a size each and a rank order, fastest-varying first. Megatron-Core's
// default is "tp-cp-ep-dp-pp": rank = t + T·(c + C·(e + E·(d + D·p))). Rank coordinates,
// the groups every collective runs over, the tied-embedding group and the fast fidelity's
// choice of simulated ranks are all computed here and nowhere else.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace trainsim::strategies {

struct Layout;

enum class ParallelDim : std::uint8_t { TENSOR, CONTEXT, EXPERT, DATA, PIPELINE };
inline constexpr int NUM_PARALLEL_DIMS = 5;

const char* short_name(ParallelDim d);  // "tp", "cp", "ep", "dp", "pp"
const char* to_string(ParallelDim d);   // "tensor", "context", "expert", "data", "pipeline"

// Dimensions from fastest- to slowest-varying rank coordinate.
using RankOrder = std::array<ParallelDim, NUM_PARALLEL_DIMS>;
inline constexpr std::string_view DEFAULT_RANK_ORDER = "tp-cp-ep-dp-pp";
inline constexpr RankOrder MEGATRON_RANK_ORDER = {ParallelDim::TENSOR, ParallelDim::CONTEXT, ParallelDim::EXPERT,
                                                  ParallelDim::DATA, ParallelDim::PIPELINE};

// "tp-cp-ep-dp-pp" → the order; a message naming the valid dimension names when the text
// is not a permutation of all five.
std::variant<RankOrder, std::string> parse_rank_order(std::string_view text);
std::string to_string(const RankOrder& order);

// A rank's coordinate along every dimension (`stage` is the pipeline coordinate).
struct RankCoords {
  std::int64_t tensor = 0, context = 0, expert = 0, data = 0, stage = 0;
  std::int64_t& operator[](ParallelDim d);
  std::int64_t operator[](ParallelDim d) const;
};

class ParallelLayout {
 public:
  using Sizes = std::array<std::int64_t, NUM_PARALLEL_DIMS>;  // indexed by ParallelDim

  ParallelLayout() : ParallelLayout(Sizes{1, 1, 1, 1, 1}) {}
  // Throws std::invalid_argument for a size below 1.
  explicit ParallelLayout(const Sizes& sizes, const RankOrder& order = MEGATRON_RANK_ORDER);

  std::int64_t size(ParallelDim d) const { return sizes_[static_cast<std::size_t>(d)]; }
  std::int64_t world() const { return world_; }
  const RankOrder& order() const { return order_; }
  // How far apart in rank two neighbours along `d` are.
  std::int64_t stride(ParallelDim d) const { return stride_[static_cast<std::size_t>(d)]; }

  RankCoords coords(std::uint32_t rank) const;
  std::uint32_t rank(const RankCoords& c) const;
  // The rank that differs from `rank` only in `d`, whose coordinate is `value`.
  std::uint32_t with(std::uint32_t rank, ParallelDim d, std::int64_t value) const;

  // The ranks that differ from `rank` only in `d`, in ring order (coordinate 0 first).
  std::vector<std::uint32_t> group(ParallelDim d, std::uint32_t rank) const;
  // An id for that group, unique among the groups of `d`: the rank's index with the `d`
  // coordinate left out (mixed radix over the other dimensions in rank order).
  std::uint64_t group_id(ParallelDim d, std::uint32_t rank) const;
  // Every group of `d`, ordered by group_id; with `fixed`, only those whose ranks have
  // coordinate `value` along it (the symmetric set of one pipeline stage: fixed = PIPELINE).
  std::vector<std::vector<std::uint32_t>> groups(ParallelDim d) const;
  std::vector<std::vector<std::uint32_t>> groups(ParallelDim d, ParallelDim fixed, std::int64_t value) const;

  // The tied-embedding group of `rank`: its peers on the first and last pipeline stage
  // (one rank with a single stage); its id is group_id(PIPELINE, rank).
  std::vector<std::uint32_t> tied_embedding_group(std::uint32_t rank) const;
  std::vector<std::vector<std::uint32_t>> tied_embedding_groups() const;

  // Fast fidelity simulates one rank per pipeline stage, the one whose every other
  // coordinate is 0; the rest are identical to it.
  bool is_representative(std::uint32_t rank) const;

 private:
  Sizes sizes_;
  RankOrder order_;
  Sizes stride_{};
  std::int64_t world_ = 1;
};

// The one place the user-facing sizes (spec.hpp's Layout) become a ParallelLayout.
// Throws std::invalid_argument when layout.rank_order is not a valid order.
ParallelLayout parallel_layout(const Layout& layout);

}  // namespace trainsim::strategies
