#pragma once
// The topology's Boost graph: vertices are Topology::vertices(), every directed edge one of
// Topology::links(), carrying its id.
#include <cstdint>

#include <boost/graph/adjacency_list.hpp>

#include "hardware/topology.hpp"

namespace trainsim::hardware {

struct EdgeLink {
  std::uint32_t link = 0;
};

class TopologyGraph
    : public boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property, EdgeLink> {
 public:
  using Base = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property, EdgeLink>;
  explicit TopologyGraph(std::size_t vertices) : Base(vertices) {}
  const Base& base() const { return *this; }
};

}  // namespace trainsim::hardware
