#!/usr/bin/env bash
# `mpirun -n 2 trainsim search` prints the same report, and writes the same table of every
# candidate, as one process.
# Usage: mpi_search_test.sh TRAINSIM MPIEXEC
set -euo pipefail
trainsim=$1 mpiexec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/search.textproto" <<'SCENARIO'
model { preset: "gpt-1.7b" }
training { sequence_length: 2048 global_batch_size: 16 precision: BF16 }
cluster { preset: "dgx-a100-80gb" nodes: 1 }
SCENARIO
"$trainsim" search "$work/search.textproto" --threads 1 --max-micro-batch 1 --top 5 --csv "$work/one.csv" \
  > "$work/one.out" 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
"$mpiexec" -n 2 "$trainsim" search "$work/search.textproto" --threads 1 --max-micro-batch 1 --top 5 \
  --csv "$work/two.csv" > "$work/two.out" 2>/dev/null
diff "$work/one.out" "$work/two.out"
cmp "$work/one.csv" "$work/two.csv"
grep -q ",fit,1," "$work/one.csv"
grep -q "top 5 by throughput" "$work/one.out"
echo "mpirun -n 2: identical search reports and tables"
