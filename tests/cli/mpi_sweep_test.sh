#!/usr/bin/env bash
# `mpirun -n 2 trainsim sweep` writes the same table, byte for byte, as one process.
# Usage: mpi_sweep_test.sh TRAINSIM MPIEXEC SOURCE_DIR
set -euo pipefail
trainsim=$1 mpiexec=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The small example with 4 × 3 × 3 = 36 variants (some invalid, some over a constraint).
cat > "$work/sweep.textproto" <<'SWEEP'
model { preset: "gpt-1.7b" }
training { sequence_length: 2048 global_batch_size: 512 precision: FP16 attention: UNFUSED }
cluster { preset: "dgx-a100-80gb" nodes: 4 }
sweep {
  axis { field: "parallel.tensor" values: ["1", "2", "4", "8"] }
  axis { field: "parallel.pipeline" values: ["1", "2", "4"] }
  axis { field: "training.micro_batch_size" values: ["1", "3", "4"] }
  constraint: "parallel.tensor * parallel.pipeline <= 16"
}
SWEEP
"$trainsim" sweep "$work/sweep.textproto" --threads 1 --csv "$work/one.csv" --jsonl "$work/one.jsonl" > "$work/one.out"
# Open MPI refuses root without these; oversubscribe: CI may have fewer cores than ranks.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
"$mpiexec" -n 2 "$trainsim" sweep "$work/sweep.textproto" --threads 1 --csv "$work/two.csv" \
  --jsonl "$work/two.jsonl" > "$work/two.out"
cmp "$work/one.csv" "$work/two.csv"
cmp "$work/one.jsonl" "$work/two.jsonl"
# The summaries differ only in the output paths they name.
diff <(grep -v wrote "$work/one.out") <(grep -v wrote "$work/two.out")
[ "$(wc -l < "$work/one.jsonl")" -eq 36 ] || { echo "expected 36 rows"; exit 1; }
grep -q '"status":"ok"' "$work/one.jsonl"
# Resumed under MPI: cut the table after 10 rows and half of the 11th.
head -c "$(head -n 11 "$work/one.csv" | wc -c)" "$work/one.csv" > "$work/cut.csv"
head -n 12 "$work/one.csv" | tail -n 1 | head -c 40 >> "$work/cut.csv"
"$mpiexec" -n 2 "$trainsim" sweep "$work/sweep.textproto" --threads 1 --csv "$work/cut.csv" > "$work/cut.out"
cmp "$work/one.csv" "$work/cut.csv"
grep -q "10 rows were already written" "$work/cut.out"
echo "mpirun -n 2: identical tables"
