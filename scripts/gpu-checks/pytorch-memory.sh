#!/bin/bash
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
timeout 60 python3 torch_memkernels.py | tee "$OUT/pytorch-memory.csv"
