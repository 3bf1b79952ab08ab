#!/bin/bash
# wgrad_accumulate (built here: see its header) beside this script: the weight-gradient GEMMs
# with fp32 accumulation against BF16 output; the CSV lands in $OUT/wgrad-accumulate.csv.
cd "$(dirname "$0")"
exec > >(tee "$OUT/log.txt") 2>&1
date
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version,power.limit --format=csv
p=$(find /usr/local/cuda/ /usr/local/cuda*/ /opt /usr/lib /usr/local/lib -name libcublasLt.so.13 2>/dev/null | head -1)
echo "libcublasLt.so.13 -> $p"
export LD_LIBRARY_PATH="$(dirname "$p")"
timeout 240 ./wgrad_accumulate | tee "$OUT/wgrad-accumulate.csv"
echo "rc $?"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
python3 -c "import transformer_engine as te; print('transformer_engine', te.__version__)" 2>&1 | tail -1
date
