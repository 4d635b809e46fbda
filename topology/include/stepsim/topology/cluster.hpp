#pragma once
// The cluster as a graph: GPUs, each node's NVLink/NVSwitch domain, NICs, leaf and spine switches.
// Every link is directed (one edge per direction) and carries bandwidth and latency. This is the one
// description of the cluster: the SimGrid platform of sim/ and the collective cost model of
// costmodel/ are both derived from it.

#include <cstdint>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::topology {

enum class VertexKind { Gpu, NvSwitch, Nic, Leaf, Spine };

struct Vertex {
  VertexKind kind = VertexKind::Gpu;
  std::int32_t node = -1;     // node index for Gpu/NvSwitch/Nic, -1 for switches of the fabric
  std::int32_t index = -1;    // local index (GPU i of the node, NIC i, leaf i, spine i)
  std::string name;           // "n3.gpu5", "n3.nic1", "leaf2", "spine0"
};

// What a link is, so that engines can give it a SimGrid sharing policy and reports can name it.
enum class LinkKind { NvLink, PcieToNic, NicToLeaf, LeafToSpine };

struct Link {
  LinkKind kind = LinkKind::NvLink;
  double bw_Bps = 0;          // this direction
  double latency_s = 0;
  std::int32_t id = -1;       // dense index of the directed link, 0..num_links-1
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Vertex, Link>;
using VertexId = Graph::vertex_descriptor;

// A route between two GPUs: the directed links it crosses, in order.
struct Route {
  std::vector<std::int32_t> links;   // Link::id of each hop
  double latency_s = 0;              // sum of hop latencies
  double bottleneck_Bps = 0;         // minimum hop bandwidth
};

class Cluster {
 public:
  explicit Cluster(const scenarios::ClusterSpec& spec);

  const scenarios::ClusterSpec& spec() const { return spec_; }
  const Graph& graph() const { return graph_; }
  std::int64_t num_gpus() const;
  std::int64_t num_links() const;
  const Link& link(std::int32_t id) const;
  VertexId gpu_vertex(std::int64_t gpu) const;
  std::int32_t node_of(std::int64_t gpu) const;
  std::int32_t nic_of(std::int64_t gpu) const;   // local NIC index the GPU uses to leave its node
  Route route(std::int64_t src_gpu, std::int64_t dst_gpu) const;

 private:
  scenarios::ClusterSpec spec_;
  Graph graph_;
  // implementation detail chosen by topology/src
  std::vector<VertexId> gpu_vertices_;
  std::vector<std::pair<VertexId, VertexId>> link_ends_;
};

// Megatron's rank order: rank = tp + t*(cp + c*(dp + d*pp)) for "tp-cp-dp-pp"; other orders permute.
struct Coord {
  std::int64_t tp = 0, cp = 0, dp = 0, pp = 0;
};

class Placement {
 public:
  // order: "tp-cp-dp-pp" (default) or "tp-cp-pp-dp" and the other permutations; first varies fastest.
  Placement(const scenarios::ParallelSpec& parallel, const std::string& order);
  std::int64_t rank(const Coord& c) const;   // global rank == GPU index (rank r runs on GPU r)
  Coord coord(std::int64_t rank) const;
  // Members of the group of `rank` along one dimension, ordered by that dimension's index.
  std::vector<std::int64_t> tp_group(std::int64_t rank) const;
  std::vector<std::int64_t> cp_group(std::int64_t rank) const;
  std::vector<std::int64_t> dp_group(std::int64_t rank) const;
  std::vector<std::int64_t> dp_cp_group(std::int64_t rank) const;   // gradient reduction group
  std::vector<std::int64_t> pp_group(std::int64_t rank) const;

 private:
  scenarios::ParallelSpec par_;
  std::vector<int> order_;   // dimension ids fastest first: 0 tp, 1 cp, 2 dp, 3 pp
};

// True when every member of the group sits on the same node.
bool within_node(const Cluster& cluster, const std::vector<std::int64_t>& gpus);

}  // namespace stepsim::topology
