#pragma once
// A cluster's topology (SimGrid's network zones in spirit): vertices of the kinds a
// training cluster is made of, directed links with bandwidth and latency, and one
// Boost.Graph over them that every implementation builds, checks for connectivity, and
// routes on when a scenario fails a link. Regular structures (the node's inside, the
// fabrics) route by formula in their own files (hardware/node_topology.cpp,
// hardware/fabric_*.cpp); this class owns what they share.
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace trainsim::hardware {

enum class VertexKind : std::uint8_t {
  GPU,
  NIC,
  PCIE_SWITCH,
  CPU_ROOT,     // a CPU socket's PCIe root complex
  HOST_MEMORY,  // a socket's DRAM
  NVME,
  NVSWITCH,     // a node's NVSwitch domain (its switch chips as one vertex)
  NET_SWITCH,   // a fabric switch: leaf, aggregation, spine, core
};

enum class LinkKind : std::uint8_t {
  NVLINK_UP,    // GPU -> NVSwitch
  NVLINK_DOWN,  // NVSwitch -> GPU
  NIC_UP,       // NIC -> its first fabric switch
  NIC_DOWN,     // first fabric switch -> NIC
  LEAF_UP,      // fabric switch -> the switch a level above
  LEAF_DOWN,    // fabric switch -> the switch a level below
  PCIE_D2H,     // a GPU's own PCIe link, GPU -> its PCIe switch
  PCIE_H2D,     // its PCIe switch -> the GPU
  PCIE_UP,      // any other PCIe link towards the root complex (switch uplink, NIC, NVMe)
  PCIE_DOWN,    // away from the root complex
  MEMORY,       // root complex <-> host memory
  CPU_LINK,     // socket <-> socket (xGMI, UPI)
};

struct Link {
  LinkKind kind;
  double bytes_per_s = 0;
  double latency_s = 0;
  std::uint32_t owner = 0;  // GPU for NVLINK/PCIE_D2H/H2D, NIC for NIC links, lower switch for LEAF links
  std::uint32_t from = 0;   // vertex ids
  std::uint32_t to = 0;
};

struct Vertex {
  VertexKind kind;
  std::uint32_t node = 0;   // the node for vertices inside one; the fabric level for NET_SWITCH
  std::uint32_t index = 0;  // which one of its kind (inside its node, or on its level)
};

// The Boost graph (hardware/topology_graph.hpp): kept out of this header so that code that
// only routes does not compile Boost.Graph.
class TopologyGraph;

// A failed (fraction 0) or degraded (0 < fraction < 1) cable between two named vertices:
// both directions of every link joining them.
struct LinkFault {
  std::string a;
  std::string b;
  double bandwidth_fraction = 0;
  bool operator==(const LinkFault&) const = default;
};

class Topology {
 public:
  Topology();
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  std::uint32_t add_vertex(VertexKind kind, std::uint32_t node, std::uint32_t index);
  // A link each way between a and b; returns the id of a -> b (b -> a is the next id).
  std::uint32_t add_duplex(std::uint32_t a, std::uint32_t b, LinkKind a_to_b, LinkKind b_to_a, double bytes_per_s,
                           double latency_s, std::uint32_t owner);
  void reserve(std::size_t vertices, std::size_t links);
  // Names a fabric level's switches in vertex names ("leaf3", "spine0"); level 0 is the leaf.
  void name_level(std::uint32_t level, std::string name);

  // Builds the graph and checks that every vertex reaches every other over links that have
  // not failed; throws std::invalid_argument naming an unreachable pair otherwise.
  void finish();
  // Applies faults before finish(); throws std::invalid_argument for a name that is not a
  // vertex, or two vertices no link joins.
  void apply_faults(std::span<const LinkFault> faults);

  const std::vector<Link>& links() const { return links_; }
  const std::vector<Vertex>& vertices() const { return vertices_; }
  const TopologyGraph& graph() const { return *graph_; }  // after finish()
  bool failed(std::uint32_t link) const { return !failed_.empty() && failed_[link]; }
  bool has_failures() const { return !failed_.empty(); }
  std::string vertex_name(std::uint32_t v) const;
  std::uint32_t vertex_by_name(const std::string& name) const;  // throws std::invalid_argument

  // True when `route` is a walk of consecutive links from vertex src to vertex dst.
  bool is_path(std::uint32_t src, std::uint32_t dst, std::span<const std::uint32_t> route) const;
  // A shortest path (fewest links; among those, the first found in link order) that avoids
  // failed links. Memoized: reroutes are the rare case, asked for again and again.
  std::vector<std::uint32_t> graph_route(std::uint32_t src, std::uint32_t dst) const;
  // Every shortest path avoiding failed links (the ECMP set), in link order.
  std::vector<std::vector<std::uint32_t>> graph_routes(std::uint32_t src, std::uint32_t dst) const;
  // The formula route unless it crosses a failed link, else graph_route.
  std::vector<std::uint32_t> checked(std::vector<std::uint32_t> formula, std::uint32_t src, std::uint32_t dst) const;

 private:
  std::vector<std::uint32_t> bfs_distances(std::uint32_t dst) const;  // links to dst, reverse BFS

  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<std::string> level_names_;
  std::vector<bool> failed_;  // empty when nothing failed
  std::unique_ptr<TopologyGraph> graph_;
  mutable std::mutex reroute_mutex_;
  mutable std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> reroutes_;
};

}  // namespace trainsim::hardware
