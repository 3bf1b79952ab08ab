#pragma once
// The topology's Boost graph: vertices are Topology::vertices(), every directed edge one of
// Topology::links(), carrying its id.
#include <cstdint>

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "hardware/topology.hpp"

namespace trainsim::hardware {

struct EdgeLink {
  std::uint32_t link = 0;
};

// Compressed sparse rows: built once from the link table, never edited (a fault removes no
// edge; the algorithms filter failed links out), and a few flat arrays instead of an
// allocation per edge, which matters for a sweep that builds a cluster per variant.
class TopologyGraph
    : public boost::compressed_sparse_row_graph<boost::bidirectionalS, boost::no_property, EdgeLink, boost::no_property,
                                             std::uint32_t, std::uint32_t> {
 public:
  using Base = boost::compressed_sparse_row_graph<boost::bidirectionalS, boost::no_property, EdgeLink, boost::no_property,
                                             std::uint32_t, std::uint32_t>;
  template <class EdgeIt, class PropIt>
  TopologyGraph(EdgeIt first, EdgeIt last, PropIt props, std::size_t vertices)
      : Base(boost::edges_are_unsorted_multi_pass, first, last, props, vertices) {}
  const Base& base() const { return *this; }
};

}  // namespace trainsim::hardware
