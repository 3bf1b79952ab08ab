#!/usr/bin/env bash
# Executes every notebook in notebooks/ with Debian's Python 3 (/usr/bin/python3: its
# nbconvert, ipykernel, pandas and matplotlib; the first python3 on PATH may be another
# interpreter without them). Each notebook runs trainsim and asserts on what it plots.
# Usage: notebooks_test.sh TRAINSIM SOURCE_DIR
set -euo pipefail
trainsim=$1 src=$2
python=/usr/bin/python3
if ! "$python" -c 'import nbconvert, ipykernel, pandas, matplotlib' 2>/dev/null; then
  echo "error: $python lacks nbconvert, ipykernel, pandas or matplotlib: run scripts/setup.sh" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Stored without outputs: a notebook's figures come from running it, never from the file.
"$python" - "$src"/notebooks/*.ipynb <<'PY'
import json, sys
for path in sys.argv[1:]:
    for cell in json.load(open(path))["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, f"{path}: stored with outputs"
PY
count=0
for nb in "$src"/notebooks/*.ipynb; do
  name=$(basename "$nb" .ipynb)
  mkdir -p "$work/$name"
  # The kernel is the python3 found first on PATH: Debian's.
  PATH=/usr/bin:$PATH TRAINSIM_BIN=$trainsim TRAINSIM_SOURCE_DIR=$src TRAINSIM_NOTEBOOK_OUT=$work/$name \
    "$python" -m nbconvert --to notebook --execute --ExecutePreprocessor.timeout=300 \
    --ExecutePreprocessor.kernel_name=python3 --output-dir "$work/$name" "$nb" > /dev/null
  [ -s "$work/$name/$name.png" ] || { echo "error: $name drew no figure" >&2; exit 1; }
  count=$((count + 1))
done
[ "$count" -ge 4 ] || { echo "error: expected at least 4 notebooks, found $count" >&2; exit 1; }
echo "$count notebooks executed"
