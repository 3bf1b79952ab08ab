#!/bin/bash
# One lease: measure this GPU with trainsim's harness, phase groups in separate processes so
# that a crash in one keeps the others; everything lands in $OUT/meas.tgz and $OUT/log.txt.
cd "$(dirname "$0")"
exec > >(tee "$OUT/log.txt") 2>&1
date; uname -r
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version,power.limit --format=csv
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$name" in *H200*) BASE=h200 ;; *) BASE=h100-sxm ;; esac
echo "base profile: $BASE"
dirs=""
for n in libcudart.so.13 libcublasLt.so.13 libnccl.so.2 libcudnn.so.9; do
  p=$(find /usr/local/cuda/ /usr/local/cuda*/ /opt /usr/lib -name "$n" 2>/dev/null | head -1)
  echo "$n -> $p"; [ -n "$p" ] && dirs="$dirs:$(dirname "$p")"
done
export LD_LIBRARY_PATH="$PWD/lib$dirs"
ldd ./trainsim | grep -i "not found\|cuda\|nccl\|cudnn\|cublas"
M=/tmp/meas; mkdir -p $M
run() {
  local tag=$1 phases=$2 limit=$3 t0=$(date +%s)
  echo "=== $tag ($phases) limit $limit s"
  timeout -k 5 "$limit" ./trainsim calibrate --measure --quick --base "$BASE" --phases "$phases" \
    --measure-dir "$M/$tag" --out "$M/$tag.textproto" --report "$M/$tag.report"
  echo "=== $tag rc $? in $(( $(date +%s) - t0 )) s"
}
run gemm gemm-bf16,gemm-fp8 175
run mem memory,copies 70
run attn attention-fused,attention-unfused 100
run fp16 gemm-fp16 85
PYTHONUNBUFFERED=1 timeout 40 python3 torch_sdpa.py > $M/torch_sdpa.csv
echo "torch sdpa rc $?"; cat $M/torch_sdpa.csv | head -30
tar czf "$OUT/meas.tgz" -C /tmp meas
timeout 45 ./calib_tests --gtest_filter='Measure*' 2>&1 | tail -15
date
