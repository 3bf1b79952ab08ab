#include "hardware/topology.hpp"

#include "hardware/topology_graph.hpp"

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/reverse_graph.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace trainsim::hardware {
namespace {

constexpr std::uint32_t UNREACHED = std::numeric_limits<std::uint32_t>::max();

using Graph = TopologyGraph::Base;

// Keeps the edges whose link has not failed.
struct Keep {
  const Graph* g = nullptr;
  const Topology* t = nullptr;
  template <class Edge>
  bool operator()(const Edge& e) const {
    return !t->failed((*g)[e].link);
  }
};

// Vertices reached from `start` (forward or against the links' direction).
template <class Graph>
std::vector<bool> reached_from(const Graph& g, std::uint32_t start, std::size_t n) {
  std::vector<boost::default_color_type> color(n, boost::white_color);
  std::vector<bool> seen(n, false);
  struct Mark : boost::default_bfs_visitor {
    std::vector<bool>* seen;
    void discover_vertex(typename boost::graph_traits<Graph>::vertex_descriptor v, const Graph&) const {
      (*seen)[v] = true;
    }
  } mark;
  mark.seen = &seen;
  boost::breadth_first_search(g, start,
                              boost::visitor(mark).color_map(boost::make_iterator_property_map(
                                  color.begin(), boost::get(boost::vertex_index, g))));
  return seen;
}

using WorkingGraph = boost::filtered_graph<Graph, Keep>;

}  // namespace

Topology::Topology() = default;
Topology::~Topology() = default;

std::uint32_t Topology::add_vertex(VertexKind kind, std::uint32_t node, std::uint32_t index) {
  vertices_.push_back({kind, node, index});
  return static_cast<std::uint32_t>(vertices_.size() - 1);
}

std::uint32_t Topology::add_duplex(std::uint32_t a, std::uint32_t b, LinkKind a_to_b, LinkKind b_to_a,
                                   double bytes_per_s, double latency_s, std::uint32_t owner) {
  const auto id = static_cast<std::uint32_t>(links_.size());
  links_.push_back({a_to_b, bytes_per_s, latency_s, owner, a, b});
  links_.push_back({b_to_a, bytes_per_s, latency_s, owner, b, a});
  return id;
}

void Topology::reserve(std::size_t vertices, std::size_t links) {
  vertices_.reserve(vertices);
  links_.reserve(links);
}

void Topology::name_level(std::uint32_t level, std::string name) {
  if (level_names_.size() <= level) level_names_.resize(level + 1);
  level_names_[level] = std::move(name);
}

std::string Topology::vertex_name(std::uint32_t v) const {
  const Vertex& x = vertices_.at(v);
  const std::string node = "node" + std::to_string(x.node) + ".";
  const std::string i = std::to_string(x.index);
  switch (x.kind) {
    case VertexKind::GPU: return "gpu" + i;
    case VertexKind::NIC: return "nic" + i;
    case VertexKind::PCIE_SWITCH: return node + "pcie" + i;
    case VertexKind::CPU_ROOT: return node + "cpu" + i;
    case VertexKind::HOST_MEMORY: return node + "mem" + i;
    case VertexKind::NVME: return node + "nvme" + i;
    case VertexKind::NVSWITCH: return node + "nvswitch";
    case VertexKind::NET_SWITCH:
      return (x.node < level_names_.size() ? level_names_[x.node] : "switch" + std::to_string(x.node) + "_") + i;
  }
  return "?";
}

std::uint32_t Topology::vertex_by_name(const std::string& name) const {
  for (std::uint32_t v = 0; v < vertices_.size(); ++v) {
    if (vertex_name(v) == name) return v;
  }
  std::string examples;
  for (const std::uint32_t v : {0u, static_cast<std::uint32_t>(vertices_.size() - 1)}) {
    examples += (examples.empty() ? "" : ", ") + ("'" + vertex_name(v) + "'");
  }
  throw std::invalid_argument("no vertex named '" + name +
                              "' (names are gpu<i>, nic<i>, node<n>.pcie<i>, node<n>.cpu<i>, node<n>.mem<i>, "
                              "node<n>.nvme<i>, node<n>.nvswitch and the fabric's switches, e.g. " +
                              examples + ")");
}

void Topology::apply_faults(std::span<const LinkFault> faults) {
  for (const LinkFault& f : faults) {
    if (!(std::isfinite(f.bandwidth_fraction) && f.bandwidth_fraction >= 0 && f.bandwidth_fraction < 1)) {
      throw std::invalid_argument("link fault " + f.a + " - " + f.b + ": bandwidth_fraction must be from 0 (failed) to "
                                  "below 1 (degraded), got " + std::to_string(f.bandwidth_fraction));
    }
    const std::uint32_t a = vertex_by_name(f.a);
    const std::uint32_t b = vertex_by_name(f.b);
    bool any = false;
    for (std::uint32_t id = 0; id < links_.size(); ++id) {
      Link& l = links_[id];
      if (!((l.from == a && l.to == b) || (l.from == b && l.to == a))) continue;
      any = true;
      if (f.bandwidth_fraction == 0) {
        if (failed_.empty()) failed_.assign(links_.size(), false);
        failed_[id] = true;
      } else {
        l.bytes_per_s *= f.bandwidth_fraction;
      }
    }
    if (!any) throw std::invalid_argument("link fault: no link joins " + f.a + " and " + f.b);
  }
}

void Topology::finish() {
  if (vertices_.empty()) throw std::invalid_argument("topology: no vertices");
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ends(links_.size());
  std::vector<EdgeLink> ids(links_.size());
  for (std::uint32_t id = 0; id < links_.size(); ++id) {
    ends[id] = {links_[id].from, links_[id].to};
    ids[id].link = id;
  }
  graph_ = std::make_unique<TopologyGraph>(ends.begin(), ends.end(), ids.begin(), vertices_.size());
  const Graph& g = *graph_;
  // Strongly connected: everything reachable from vertex 0 and vertex 0 from everything.
  const WorkingGraph working(g, Keep{&g, this});
  const auto n = vertices_.size();
  const auto forward = reached_from(working, 0, n);
  const auto backward = reached_from(boost::make_reverse_graph(working), 0, n);
  for (std::uint32_t v = 0; v < n; ++v) {
    if (!forward[v] || !backward[v]) {
      const std::string from = forward[v] ? vertex_name(v) : vertex_name(0);
      const std::string to = forward[v] ? vertex_name(0) : vertex_name(v);
      throw std::invalid_argument("topology is disconnected: no path from " + from + " to " + to +
                                  (has_failures() ? " once the failed links are removed (fail fewer links)"
                                                  : " (a vertex without links)"));
    }
  }
}

bool Topology::is_path(std::uint32_t src, std::uint32_t dst, std::span<const std::uint32_t> route) const {
  std::uint32_t at = src;
  for (const std::uint32_t link : route) {
    if (link >= links_.size() || links_[link].from != at) return false;
    at = links_[link].to;
  }
  return at == dst;
}

std::vector<std::uint32_t> Topology::bfs_distances(std::uint32_t dst) const {
  // Breadth-first against the links' direction from dst: distance in links to dst.
  std::vector<std::uint32_t> dist(vertices_.size(), UNREACHED);
  std::vector<std::vector<std::uint32_t>> in(vertices_.size());
  for (std::uint32_t id = 0; id < links_.size(); ++id) {
    if (!failed(id)) in[links_[id].to].push_back(id);
  }
  std::vector<std::uint32_t> queue{dst};
  dist[dst] = 0;
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const std::uint32_t v = queue[q];
    for (const std::uint32_t id : in[v]) {
      const std::uint32_t u = links_[id].from;
      if (dist[u] == UNREACHED) {
        dist[u] = dist[v] + 1;
        queue.push_back(u);
      }
    }
  }
  return dist;
}

std::vector<std::uint32_t> Topology::graph_route(std::uint32_t src, std::uint32_t dst) const {
  const std::uint64_t key = (std::uint64_t{src} << 32) | dst;
  {
    const std::lock_guard<std::mutex> lock(reroute_mutex_);
    if (const auto it = reroutes_.find(key); it != reroutes_.end()) return it->second;
  }
  std::vector<std::uint32_t> route;
  if (src != dst) {
    // Breadth-first from src on the graph without failed links, keeping each vertex's
    // first discovering edge: the shortest path, first in link order.
    const Graph& g = graph_->base();
    const WorkingGraph working(g, Keep{&g, this});
    std::vector<std::uint32_t> via(vertices_.size(), UNREACHED);
    std::vector<boost::default_color_type> color(vertices_.size(), boost::white_color);
    struct Tree : boost::default_bfs_visitor {
      std::vector<std::uint32_t>* via;
      void tree_edge(boost::graph_traits<WorkingGraph>::edge_descriptor e, const WorkingGraph& g) const {
        (*via)[boost::target(e, g)] = g[e].link;
      }
    } tree;
    tree.via = &via;
    boost::breadth_first_search(working, src,
                                boost::visitor(tree).color_map(boost::make_iterator_property_map(
                                    color.begin(), boost::get(boost::vertex_index, working))));
    if (via[dst] == UNREACHED) {
      throw std::invalid_argument("no route from " + vertex_name(src) + " to " + vertex_name(dst) +
                                  " avoids the failed links");
    }
    for (std::uint32_t at = dst; at != src; at = links_[via[at]].from) route.push_back(via[at]);
    std::reverse(route.begin(), route.end());
  }
  const std::lock_guard<std::mutex> lock(reroute_mutex_);
  return reroutes_.try_emplace(key, std::move(route)).first->second;
}

std::vector<std::vector<std::uint32_t>> Topology::graph_routes(std::uint32_t src, std::uint32_t dst) const {
  std::vector<std::vector<std::uint32_t>> out;
  if (src == dst) return {{}};
  const auto dist = bfs_distances(dst);
  if (dist[src] == UNREACHED) return out;
  // Depth-first along links that bring the distance down by one.
  std::vector<std::uint32_t> path;
  auto walk = [&](auto&& self, std::uint32_t at) -> void {
    if (at == dst) {
      out.push_back(path);
      return;
    }
    const Graph& g = graph_->base();
    for (auto [e, end] = boost::out_edges(at, g); e != end; ++e) {
      const std::uint32_t id = g[*e].link;
      const std::uint32_t next = links_[id].to;
      if (failed(id) || dist[next] == UNREACHED || dist[next] + 1 != dist[at]) continue;
      path.push_back(id);
      self(self, next);
      path.pop_back();
    }
  };
  walk(walk, src);
  return out;
}

std::vector<std::uint32_t> Topology::checked(std::vector<std::uint32_t> formula, std::uint32_t src,
                                             std::uint32_t dst) const {
  if (!has_failures()) return formula;
  for (const std::uint32_t l : formula) {
    if (failed_[l]) return graph_route(src, dst);
  }
  return formula;
}

}  // namespace trainsim::hardware
