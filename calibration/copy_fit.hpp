#pragma once
// Copy bandwidths (host↔device pinned and pageable, device↔device, peer): one α–β line per
// kind of copy, t(S) = α + S / bandwidth, fitted with the α–β fit the collectives use but
// held to a single segment: a copy engine has no protocol switch to cut the size range at.
// Input is the harness's copies.csv (calibration/measure_output.hpp: kind,bytes,seconds).
#include <cstddef>
#include <string>
#include <vector>

#include "calibration/alpha_beta_fit.hpp"
#include "calibration/measure_output.hpp"

namespace trainsim::calibration {

struct CopyKindFit {
  std::string kind;  // as copies.csv names it: "h2d-pinned", "d2h-pinned", "d2d", "peer-0-1", …
  int sizes = 0;     // distinct sizes measured
  double alpha_s = 0;
  double bytes_per_s = 0;  // 1/β of the line fitted on every size
  HoldoutResult held;      // every third size held back (alpha_beta_fit.hpp's hold_out_sizes)
};

// Distinct sizes a kind needs: stride 3 then holds back two whole sizes and fits on four.
inline constexpr int kMinCopySizes = 6;
inline constexpr int kCopyHoldoutStride = 3;
// As for nccl-tests logs (profile_fit.cpp): the α–β fit is cubic in the sizes, and a sweep
// doubling from 1 B to 16 GiB has 35.
inline constexpr std::size_t kMaxCopySizes = 512;

// Reads "kind,bytes,seconds" (header first; '#' lines and blank lines skipped). Errors name
// origin, line and field. Appends to `out`; returns "" or the error. Rows of
// `zero_bytes_kind` (memory.csv's "launch": seconds per empty kernel) may have 0 bytes.
[[nodiscard]] std::string read_sized_csv(const std::string& text, const std::string& origin,
                                         std::vector<SizedRecord>& out, const std::string& zero_bytes_kind = "");

// One fit per kind, kinds in order of first appearance. A kind with fewer than
// kMinCopySizes distinct sizes is an error naming it (returned in `error`) or, when
// `skipped` is given, is left out and described there (a measuring run cut short by its
// time budget still fits the kinds it completed).
// `noun` names a kind in messages ("copy kind", "memory kernel").
[[nodiscard]] std::vector<CopyKindFit> fit_copies(const std::vector<SizedRecord>& rows, const std::string& origin,
                                                  std::string& error, std::vector<std::string>* skipped = nullptr,
                                                  const std::string& noun = "copy kind");

}  // namespace trainsim::calibration
