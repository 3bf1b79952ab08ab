#!/usr/bin/env bash
# Sets up the machine, builds trainsim and runs the default example scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-scenarios/examples/gpt3-175b-a100-1024.textproto}
./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target trainsim
./build/cli/trainsim run "$scenario"
