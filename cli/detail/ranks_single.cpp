// Ranks without MPI: this process is the only rank.
#include "cli/detail/ranks.hpp"

namespace trainsim::cli::detail {

Ranks::Ranks() = default;
Ranks::~Ranks() = default;
bool Ranks::built_with_mpi() { return false; }
std::uint64_t Ranks::broadcast(std::uint64_t value) const { return value; }
std::vector<std::vector<std::string>> Ranks::all_gather(const std::vector<std::string>& mine) const { return {mine}; }

}  // namespace trainsim::cli::detail
