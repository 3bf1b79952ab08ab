#pragma once
// The processes one command runs on: MPI's ranks when trainsim was built with MPI and
// started by mpirun (or any MPI launcher), else this process alone. Sweep and search split
// their variants among ranks and gather the results at rank 0, which alone writes.
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::cli::detail {

class Ranks {
 public:
  // Starts MPI when built with it (a singleton run without a launcher is one rank).
  Ranks();
  // Ends MPI.
  ~Ranks();
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank 0's value, on every rank.
  std::uint64_t broadcast(std::uint64_t value) const;
  // Every rank's parts, on every rank, in rank order; within a rank in its order.
  std::vector<std::vector<std::string>> all_gather(const std::vector<std::string>& mine) const;
  // Whether MPI support was built in.
  static bool built_with_mpi();

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace trainsim::cli::detail
