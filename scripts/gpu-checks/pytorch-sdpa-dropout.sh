#!/bin/bash
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
timeout 60 python3 torch_sdpa_dropout.py 2>&1 | tee "$OUT/pytorch-sdpa-dropout.csv"
