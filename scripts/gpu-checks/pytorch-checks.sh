#!/bin/bash
cd "$(dirname "$0")"
exec > >(tee "$OUT/log2.txt") 2>&1
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
export PYTHONUNBUFFERED=1
timeout 80 python3 torch_layer.py layers
timeout 60 python3 torch_layer.py model
timeout 100 python3 torch_layer.py gemm > "$OUT/torch_gemm.csv"; echo "gemm rc $?"; wc -l "$OUT/torch_gemm.csv"
sleep 1
