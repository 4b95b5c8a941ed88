#!/usr/bin/env bash
# Leave large fixtures out of a copy of the working tree that has a size limit (the GPU jobs
# never read fixtures/runs/h200-example's ncu report or the causes run's .nsys-rep):
#   bash scripts/gpu/park_fixtures.sh on     # untracked in the index and ignored locally
#   bash scripts/gpu/park_fixtures.sh off    # tracked again, the ignore lines removed
# The files stay on disk. Commit nothing between "on" and "off": the index then lacks them.
set -eu
cd "$(git rev-parse --show-toplevel)"
files=(fixtures/captures/causes/run/nsys/report.nsys-rep fixtures/runs/h200-example/ncu/report.ncu-rep.gz)
ex=.git/info/exclude
case "${1:-}" in
  on)
    git rm -q --cached -- "${files[@]}"
    for f in "${files[@]}"; do grep -qxF "$f" "$ex" || echo "$f" >> "$ex"; done ;;
  off)
    for f in "${files[@]}"; do grep -vxF "$f" "$ex" > "$ex.tmp" || true; mv "$ex.tmp" "$ex"; done
    git reset -q HEAD -- "${files[@]}" ;;
  *) echo "usage: bash scripts/gpu/park_fixtures.sh on|off" >&2; exit 2 ;;
esac
git status --short -- "${files[@]}"
