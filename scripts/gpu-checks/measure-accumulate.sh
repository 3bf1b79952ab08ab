#!/bin/bash
# The harness's accumulate phase alone (calibrate --measure --quick --phases gemm-accumulate)
# and its GPU-only test, staged as measure.sh is; results under $OUT.
cd "$(dirname "$0")"
exec > >(tee "$OUT/log.txt") 2>&1
date
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$name" in *H200*) BASE=h200 ;; *) BASE=h100-sxm ;; esac
dirs=""
for n in libcudart.so.13 libcublasLt.so.13 libnccl.so.2 libcudnn.so.9; do
  p=$(find /usr/local/cuda/ /usr/local/cuda*/ /opt /usr/lib -name "$n" 2>/dev/null | head -1)
  [ -n "$p" ] && dirs="$dirs:$(dirname "$p")"
done
export LD_LIBRARY_PATH="$PWD/lib$dirs"
ldd ./trainsim | grep -i "not found"
timeout -k 5 120 ./trainsim calibrate --measure --quick --base "$BASE" --phases gemm-accumulate \
  --measure-dir "$OUT/acc" --out "$OUT/acc.textproto" --report "$OUT/acc.report"
echo "calibrate rc $?"
cat "$OUT/acc.report"
grep -A2 gemm_accumulate "$OUT/acc.textproto"
timeout 120 ./calib_tests --gtest_filter='Measure.*' 2>&1 | tail -20
date
