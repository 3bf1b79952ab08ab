#!/bin/bash
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
timeout 100 python3 torch_profile.py 2>&1 | tee "$OUT/pytorch-profile.txt"
