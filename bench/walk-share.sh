#!/usr/bin/env bash
# What reading the parse trees costs, next to the parse itself: alternates RUNS rounds of
# `parse_floor` (the bare parse), `parse_floor --walk` (the parse, then every node visited
# once with tree-sitter's cursor) and `parse_floor --extract` (the parse and the build's
# extractor), then prints the median CPU seconds and parse-phase wall seconds of each and
# their ratios to the bare parse. CPU seconds vary far less than wall time here.
#
# Usage: bench/walk-share.sh CORPUS_DIR
# Environment: PARSE_FLOOR (default <repo>/target/release/parse_floor), THREADS (default
# nproc), RUNS (default 3).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(cd "${1:?usage: $0 CORPUS_DIR}" && pwd)
PARSE_FLOOR=${PARSE_FLOOR:-$HERE/../target/release/parse_floor}
THREADS=${THREADS:-$(nproc)}
RUNS=${RUNS:-3}
out=$(mktemp); trap 'rm -f "$out"' EXIT
for _ in $(seq "$RUNS"); do
  for mode in parse walk extract; do
    flag=(); [ "$mode" = parse ] || flag=("--$mode")
    line=$("$PARSE_FLOOR" --threads "$THREADS" "${flag[@]}" "$D" | tr '\n' ' ')
    echo "$mode $line" >>"$out"
  done
done
python3 - "$out" "$D" "$THREADS" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    mode, rest = line.split(' ', 1)
    kv = dict(re.findall(r'(\w+)=(\S+)', rest))
    runs.setdefault(mode, []).append(kv)
med = lambda mode, k: statistics.median(float(r[k]) for r in runs[mode])
print(f"{sys.argv[2]}: {sys.argv[3]} threads, median of {len(runs['parse'])} runs")
for mode in ('parse', 'walk', 'extract'):
    extra = f" walked_nodes={runs[mode][0]['walked_nodes']}" if mode == 'walk' else ''
    print(f"{mode:8} cpu_s={med(mode, 'cpu_s'):.2f} ({med(mode, 'cpu_s') / med('parse', 'cpu_s'):.2f}x) "
          f"parse_s={med(mode, 'parse_s'):.2f} ({med(mode, 'parse_s') / med('parse', 'parse_s'):.2f}x){extra}")
PY
