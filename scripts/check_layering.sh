#!/usr/bin/env bash
# Layering (../shared/DESIGN.md "Folders and layering"): each folder includes only the
# folders its row allows, always with repository-rooted paths ("sim/plan.hpp"), and no
# folder includes another folder's detail/ headers. Prints every violation; exit 1 if any.
set -u
cd "$(dirname "$0")/.."
declare -A allowed=(
  [sim]=""
  [hardware]="sim"
  [models]=""
  [strategies]="sim hardware models"
  [report]="sim hardware models strategies"
  [calibration]="sim hardware models"
  [scenarios]="sim hardware models strategies report calibration"
  [cli]="sim hardware models strategies report calibration scenarios"
)
folders="sim hardware models strategies report calibration scenarios cli tests bench"
bad=0
for dir in sim hardware models strategies report calibration scenarios cli; do
  while IFS= read -r line; do
    file=${line%%:*}
    inc=$(sed -n 's/.*#include *"\([^"]*\)".*/\1/p' <<<"$line")
    top=${inc%%/*}
    if [ "$top" = "$inc" ]; then
      echo "$file: include \"$inc\" is not rooted at the repository"; bad=1; continue
    fi
    [ "$top" = "$dir" ] && continue
    if ! grep -qw "$top" <<<"$folders"; then continue; fi  # generated or third-party
    if ! grep -qw "$top" <<<"${allowed[$dir]}"; then
      echo "$file: $dir/ may not include $inc"; bad=1
    elif [[ "$inc" == */detail/* ]]; then
      echo "$file: $inc is private to $top/"; bad=1
    fi
  done < <(grep -rn --include='*.hpp' --include='*.h' --include='*.cpp' --include='*.cc' --include='*.cu' \
             --include='*.def' '#include "' "$dir" 2>/dev/null)
done
[ $bad -eq 0 ] && echo "layering holds"
exit $bad
