#!/usr/bin/env bash
# Installs every Debian package trainsim needs. Idempotent and non-interactive:
# packages already present are skipped, so a second run does no network work.
set -euo pipefail
packages=(
  cmake g++ ninja-build
  protobuf-compiler libprotobuf-dev
  libboost-dev libboost-graph-dev
  libfmt-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # libFuzzer for tests/fuzz (scripts/test.sh's fuzz stages)
  libeigen3-dev  # least-squares fits in calibration/
  libmimalloc-dev  # the executables' allocator (CMakeLists.txt: TRAINSIM_MIMALLOC)
  libopenmpi-dev openmpi-bin  # sweep and search across MPI ranks (mpirun -n N trainsim sweep …)
  jupyter-nbconvert python3-nbconvert python3-ipykernel python3-pandas python3-matplotlib  # notebooks/
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "setup: installing ${missing[*]}"
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
