#pragma once
// The cluster's topology as a directed Boost graph: vertices are GPUs, NVSwitches (one per
// node, standing for the node's switch chips), leaf switches and the spine (one vertex for
// the whole spine layer); every directed edge is one of the Cluster's links and carries its
// id. Routes are computed algorithmically (Cluster::route); the graph is what checks them
// and what graph algorithms (connectivity, alternative paths) run on.
#include "hardware/cluster.hpp"
#include "hardware/detail/fabric_layout.hpp"

#include <boost/graph/adjacency_list.hpp>

#include <cstdint>
#include <span>

namespace trainsim::hardware::detail {

struct EdgeLink {
  std::uint32_t link = 0;
};

using TopologyGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, EdgeLink>;

// Built from the cluster's link table alone (each link's kind and owner say which two
// vertices it joins), so that it checks the links as much as the routes. Constructed in
// place: Boost's adjacency_list has no move constructor, and copying a large graph is waste.
class Topology {
 public:
  explicit Topology(const Cluster& cluster)
      : num_gpus(cluster.num_gpus()),
        num_nodes(static_cast<std::uint32_t>(cluster.spec().nodes)),
        num_leaves(static_cast<std::uint32_t>(detail::num_leaves(cluster.spec()))),
        graph(spine_vertex() + 1) {
    const auto& links = cluster.links();
    for (std::uint32_t id = 0; id < links.size(); ++id) {
      const Link& l = links[id];
      std::uint32_t from = 0;
      std::uint32_t to = 0;
      switch (l.kind) {
        case LinkKind::NVLINK_UP: from = gpu_vertex(l.owner); to = switch_vertex(cluster.node_of(l.owner)); break;
        case LinkKind::NVLINK_DOWN: from = switch_vertex(cluster.node_of(l.owner)); to = gpu_vertex(l.owner); break;
        case LinkKind::NIC_UP: from = gpu_vertex(l.owner); to = leaf_vertex(cluster.leaf_of(l.owner)); break;
        case LinkKind::NIC_DOWN: from = leaf_vertex(cluster.leaf_of(l.owner)); to = gpu_vertex(l.owner); break;
        case LinkKind::LEAF_UP: from = leaf_vertex(l.owner); to = spine_vertex(); break;
        case LinkKind::LEAF_DOWN: from = spine_vertex(); to = leaf_vertex(l.owner); break;
      }
      boost::add_edge(from, to, EdgeLink{id}, graph);
    }
  }
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  std::uint32_t gpu_vertex(std::uint32_t gpu) const { return gpu; }
  std::uint32_t switch_vertex(std::uint32_t node) const { return num_gpus + node; }
  std::uint32_t leaf_vertex(std::uint32_t leaf) const { return num_gpus + num_nodes + leaf; }
  std::uint32_t spine_vertex() const { return num_gpus + num_nodes + num_leaves; }

  const std::uint32_t num_gpus;
  const std::uint32_t num_nodes;
  const std::uint32_t num_leaves;
  TopologyGraph graph;
};

// True when `route` is a walk of consecutive edges from GPU src to GPU dst.
inline bool is_connected_path(const Topology& t, std::uint32_t src, std::uint32_t dst,
                              std::span<const std::uint32_t> route) {
  std::uint32_t at = t.gpu_vertex(src);
  for (const std::uint32_t link : route) {
    bool found = false;
    for (auto [e, end] = boost::out_edges(at, t.graph); e != end; ++e) {
      if (t.graph[*e].link == link) {
        at = static_cast<std::uint32_t>(boost::target(*e, t.graph));
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return at == t.gpu_vertex(dst);
}

}  // namespace trainsim::hardware::detail
