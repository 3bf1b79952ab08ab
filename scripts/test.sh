#!/usr/bin/env bash
# Sets up the machine, builds, and runs every test twice: in an optimized build and under
# AddressSanitizer + UndefinedBehaviorSanitizer (then the examples under the sanitizers);
# last, the libFuzzer targets of the readers (a Clang build of their own) run for a bounded
# time each. Each stage prints its wall time.
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
examples_sanitized() {
  for f in scenarios/examples/*.textproto scenarios/examples/*.json; do
    build-sanitize/cli/trainsim run "$f" --fidelity fast >/dev/null
  done
}
stage examples-sanitizers examples_sanitized
stage configure-fuzz cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DTRAINSIM_FUZZ=ON -DTRAINSIM_BUILD_TESTS=OFF -DTRAINSIM_BUILD_BENCH=OFF
stage build-fuzz cmake --build build-fuzz -j"$jobs" --target scenario_fuzz hf_config_fuzz runs_table_fuzz nccl_tests_log_fuzz
stage test-fuzz ctest --test-dir build-fuzz --output-on-failure -j"$jobs" -L fuzz
