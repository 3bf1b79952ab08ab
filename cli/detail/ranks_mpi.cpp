// Ranks over MPI (built when CMake finds MPI; ranks_single.cpp otherwise).
#include <mpi.h>

#include <cstdlib>
#include <cstring>

#include "cli/detail/ranks.hpp"

namespace trainsim::cli::detail {
namespace {

// Parts as one buffer: each part's length (8 bytes) then its bytes.
std::string pack(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    const std::uint64_t n = p.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out += p;
  }
  return out;
}

std::vector<std::string> unpack(const char* data, std::size_t size) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at + sizeof(std::uint64_t) <= size) {
    std::uint64_t n = 0;
    std::memcpy(&n, data + at, sizeof n);
    at += sizeof n;
    out.emplace_back(data + at, n);
    at += n;
  }
  return out;
}

// Started by a launcher (mpirun, srun)? Without one, MPI is not started at all: a plain
// run, or a test that runs several commands in one process, stays one rank.
bool launched() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

bool started = false;

}  // namespace

Ranks::Ranks() {
  if (!launched()) return;
  started = true;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Ranks::~Ranks() {
  if (!started) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

bool Ranks::built_with_mpi() { return true; }

std::uint64_t Ranks::broadcast(std::uint64_t value) const {
  if (size_ == 1) return value;
  unsigned long long v = value;
  MPI_Bcast(&v, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  return v;
}

std::vector<std::vector<std::string>> Ranks::all_gather(const std::vector<std::string>& mine) const {
  if (size_ == 1) return {mine};
  const std::string packed = pack(mine);
  // Sizes first (a block's rows fit an int: far below 2 GiB), then the bytes.
  int length = static_cast<int>(packed.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int> offsets(static_cast<std::size_t>(size_));
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += lengths[static_cast<std::size_t>(r)];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(packed.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  std::vector<std::vector<std::string>> out;
  for (int r = 0; r < size_; ++r)
    out.push_back(unpack(all.data() + offsets[static_cast<std::size_t>(r)],
                         static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  return out;
}

}  // namespace trainsim::cli::detail
