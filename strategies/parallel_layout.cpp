#include "strategies/parallel_layout.hpp"

#include <stdexcept>

#include "strategies/spec.hpp"

namespace trainsim::strategies {

namespace {

constexpr std::array<ParallelDim, NUM_PARALLEL_DIMS> ALL_DIMS = MEGATRON_RANK_ORDER;

std::size_t index(ParallelDim d) { return static_cast<std::size_t>(d); }

std::string valid_names() {
  std::string out;
  for (ParallelDim d : ALL_DIMS) {
    if (!out.empty()) out += ", ";
    out += std::string(short_name(d)) + " (" + to_string(d) + ")";
  }
  return out;
}

}  // namespace

const char* short_name(ParallelDim d) {
  switch (d) {
    case ParallelDim::TENSOR: return "tp";
    case ParallelDim::CONTEXT: return "cp";
    case ParallelDim::EXPERT: return "ep";
    case ParallelDim::DATA: return "dp";
    case ParallelDim::PIPELINE: return "pp";
  }
  return "?";
}

const char* to_string(ParallelDim d) {
  switch (d) {
    case ParallelDim::TENSOR: return "tensor";
    case ParallelDim::CONTEXT: return "context";
    case ParallelDim::EXPERT: return "expert";
    case ParallelDim::DATA: return "data";
    case ParallelDim::PIPELINE: return "pipeline";
  }
  return "?";
}

std::variant<RankOrder, std::string> parse_rank_order(std::string_view text) {
  const std::string expected = "a rank order names each of the " + std::to_string(NUM_PARALLEL_DIMS) +
                               " dimensions once, fastest first, separated by '-' (default \"" +
                               std::string(DEFAULT_RANK_ORDER) + "\"; dimensions: " + valid_names() + ")";
  RankOrder order{};
  std::array<bool, NUM_PARALLEL_DIMS> seen{};
  std::size_t n = 0;
  std::size_t pos = 0;
  while (true) {
    const std::size_t dash = text.find('-', pos);
    const std::string_view name = text.substr(pos, dash == std::string_view::npos ? std::string_view::npos : dash - pos);
    bool known = false;
    for (ParallelDim d : ALL_DIMS) {
      if (name != short_name(d)) continue;
      known = true;
      if (seen[index(d)]) return "\"" + std::string(name) + "\" appears twice in \"" + std::string(text) + "\"; " + expected;
      seen[index(d)] = true;
      if (n < order.size()) order[n] = d;
      ++n;
    }
    if (!known) return "unknown dimension \"" + std::string(name) + "\" in \"" + std::string(text) + "\"; " + expected;
    if (dash == std::string_view::npos) break;
    pos = dash + 1;
  }
  if (n != order.size()) {
    std::string missing;
    for (ParallelDim d : ALL_DIMS)
      if (!seen[index(d)]) missing += std::string(missing.empty() ? "" : ", ") + short_name(d);
    return "\"" + std::string(text) + "\" leaves out " + missing + "; " + expected;
  }
  return order;
}

std::string to_string(const RankOrder& order) {
  std::string out;
  for (ParallelDim d : order) {
    if (!out.empty()) out += "-";
    out += short_name(d);
  }
  return out;
}

std::int64_t& RankCoords::operator[](ParallelDim d) {
  switch (d) {
    case ParallelDim::TENSOR: return tensor;
    case ParallelDim::CONTEXT: return context;
    case ParallelDim::EXPERT: return expert;
    case ParallelDim::DATA: return data;
    case ParallelDim::PIPELINE: return stage;
  }
  return stage;
}

std::int64_t RankCoords::operator[](ParallelDim d) const { return const_cast<RankCoords&>(*this)[d]; }

ParallelLayout::ParallelLayout(const Sizes& sizes, const RankOrder& order) : sizes_(sizes), order_(order) {
  std::array<bool, NUM_PARALLEL_DIMS> seen{};
  for (ParallelDim d : order_) {
    if (seen[index(d)]) throw std::invalid_argument("ParallelLayout: rank order names " + std::string(to_string(d)) + " twice");
    seen[index(d)] = true;
  }
  for (ParallelDim d : order_) {
    if (size(d) < 1) throw std::invalid_argument(std::string("ParallelLayout: ") + to_string(d) + " size must be positive");
    stride_[index(d)] = world_;
    world_ *= size(d);
  }
}

RankCoords ParallelLayout::coords(std::uint32_t rank) const {
  RankCoords c;
  for (ParallelDim d : order_) c[d] = (static_cast<std::int64_t>(rank) / stride(d)) % size(d);
  return c;
}

std::uint32_t ParallelLayout::rank(const RankCoords& c) const {
  std::int64_t r = 0;
  for (ParallelDim d : order_) r += c[d] * stride(d);
  return static_cast<std::uint32_t>(r);
}

std::uint32_t ParallelLayout::with(std::uint32_t rank, ParallelDim d, std::int64_t value) const {
  const std::int64_t own = (static_cast<std::int64_t>(rank) / stride(d)) % size(d);
  return static_cast<std::uint32_t>(static_cast<std::int64_t>(rank) + (value - own) * stride(d));
}

std::vector<std::uint32_t> ParallelLayout::group(ParallelDim d, std::uint32_t rank) const {
  std::vector<std::uint32_t> ranks;
  ranks.reserve(static_cast<std::size_t>(size(d)));
  for (std::int64_t i = 0; i < size(d); ++i) ranks.push_back(with(rank, d, i));
  return ranks;
}

std::uint64_t ParallelLayout::group_id(ParallelDim d, std::uint32_t rank) const {
  const RankCoords c = coords(rank);
  std::uint64_t id = 0, radix = 1;
  for (ParallelDim o : order_) {
    if (o == d) continue;
    id += static_cast<std::uint64_t>(c[o]) * radix;
    radix *= static_cast<std::uint64_t>(size(o));
  }
  return id;
}

std::vector<std::vector<std::uint32_t>> ParallelLayout::groups(ParallelDim d) const {
  std::vector<std::vector<std::uint32_t>> out;
  const std::int64_t count = world_ / size(d);
  out.reserve(static_cast<std::size_t>(count));
  for (std::int64_t id = 0; id < count; ++id) {
    RankCoords c;
    std::int64_t rest = id;
    for (ParallelDim o : order_) {
      if (o == d) continue;
      c[o] = rest % size(o);
      rest /= size(o);
    }
    out.push_back(group(d, rank(c)));
  }
  return out;
}

std::vector<std::vector<std::uint32_t>> ParallelLayout::groups(ParallelDim d, ParallelDim fixed,
                                                                std::int64_t value) const {
  std::vector<std::vector<std::uint32_t>> out;
  if (fixed == d) {
    for (auto& g : groups(d))
      if (coords(g.front())[fixed] == value) out.push_back(std::move(g));
    return out;
  }
  if (value < 0 || value >= size(fixed)) return out;
  // The groups of groups(d) whose `fixed` coordinate is `value`, in the same order, without
  // building the others: a sweep's lowering asks for them stage by stage.
  const std::int64_t count = world_ / size(d) / size(fixed);
  out.reserve(static_cast<std::size_t>(count));
  for (std::int64_t id = 0; id < count; ++id) {
    RankCoords c;
    std::int64_t rest = id;
    for (ParallelDim o : order_) {
      if (o == d) continue;
      if (o == fixed) {
        c[o] = value;
        continue;
      }
      c[o] = rest % size(o);
      rest /= size(o);
    }
    out.push_back(group(d, rank(c)));
  }
  return out;
}

std::vector<std::uint32_t> ParallelLayout::tied_embedding_group(std::uint32_t rank) const {
  const std::int64_t last = size(ParallelDim::PIPELINE) - 1;
  if (last == 0) return {rank};
  return {with(rank, ParallelDim::PIPELINE, 0), with(rank, ParallelDim::PIPELINE, last)};
}

std::vector<std::vector<std::uint32_t>> ParallelLayout::tied_embedding_groups() const {
  std::vector<std::vector<std::uint32_t>> out;
  for (const auto& g : groups(ParallelDim::PIPELINE)) out.push_back(tied_embedding_group(g.front()));
  return out;
}

bool ParallelLayout::is_representative(std::uint32_t rank) const {
  const RankCoords c = coords(rank);
  for (ParallelDim d : order_)
    if (d != ParallelDim::PIPELINE && c[d] != 0) return false;
  return true;
}

ParallelLayout parallel_layout(const Layout& l) {
  auto order = parse_rank_order(l.rank_order);
  if (const auto* message = std::get_if<std::string>(&order)) throw std::invalid_argument("rank_order: " + *message);
  return ParallelLayout({l.tensor, l.context, l.expert, l.data, l.pipeline}, std::get<RankOrder>(order));
}

}  // namespace trainsim::strategies
