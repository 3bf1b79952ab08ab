#!/usr/bin/env bash
# Sets up the machine, builds, and runs every test twice: in an optimized build and under
# AddressSanitizer + UndefinedBehaviorSanitizer. Each stage prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
stage() { local name=$1; shift; local t0=$SECONDS; "$@"; echo "== stage '$name' took $((SECONDS - t0)) s"; }

stage setup ./scripts/setup.sh
stage configure cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
stage build cmake --build build -j"$jobs"
stage test ctest --test-dir build --output-on-failure -j"$jobs"
stage configure-sanitizers cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTRAINSIM_SANITIZE=ON -DTRAINSIM_BUILD_BENCH=OFF
stage build-sanitizers cmake --build build-sanitize -j"$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
stage test-sanitizers ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -LE slow
