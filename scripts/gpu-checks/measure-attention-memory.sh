#!/bin/bash
cd "$(dirname "$0")"
exec > >(tee "$OUT/log3.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version --format=csv
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$name" in *H200*) BASE=h200 ;; *) BASE=h100-sxm ;; esac
dirs=""
for n in libcudart.so.13 libcublasLt.so.13 libnccl.so.2 libcudnn.so.9; do
  p=$(find /usr/local/cuda/ /usr/local/cuda*/ /opt /usr/lib -name "$n" 2>/dev/null | head -1); [ -n "$p" ] && dirs="$dirs:$(dirname "$p")"
done
export LD_LIBRARY_PATH="$PWD/lib$dirs"
M=/tmp/meas3; mkdir -p $M
timeout -k 5 120 ./trainsim calibrate --measure --quick --base "$BASE" --phases memory,attention-fused,attention-unfused \
  --measure-dir "$M/run" --out "$M/run.textproto" --report "$M/run.report"
echo "rc $?"; cat $M/run.report
tar czf "$OUT/meas3.tgz" -C /tmp meas3
sleep 1
