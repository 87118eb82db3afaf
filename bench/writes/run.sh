#!/usr/bin/env bash
# Writable-graph writes against Kùzu 0.11.3 (Python), the same workloads in the same run.
#
#   bench/writes/run.sh SCRATCH
#
# Environment: WRITE_BENCH (default target/release/write_bench, from
# `cargo build --release -p batho-bench`), PYTHON (a python with kuzu==0.11.3; default
# python3), RUNS (runs per workload, default 3; the median is reported).
set -euo pipefail
SCRATCH=${1:?usage: run.sh SCRATCH}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WRITE_BENCH=${WRITE_BENCH:-$ROOT/target/release/write_bench}
PYTHON=${PYTHON:-python3}
RUNS=${RUNS:-3}
mkdir -p "$SCRATCH"
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== kuzu $($PYTHON -c 'import kuzu; print(kuzu.__version__)')"

# One workload `runs` times on each engine, every run in a fresh folder; prints each run's line.
for workload in single single-fsync transaction bulk; do
  for run in $(seq "$RUNS"); do
    rm -rf "$SCRATCH/batho" "$SCRATCH/kuzu"
    echo "batho $workload $run: $("$WRITE_BENCH" "$workload" "$SCRATCH/batho" | tr '\n' ' ')"
    # Kùzu commits with its own durability; it has no separate no-fsync mode to compare.
    if [ "$workload" != single-fsync ]; then
      echo "kuzu  $workload $run: $("$PYTHON" "$HERE/kuzu_writes.py" "$workload" "$SCRATCH/kuzu" | tr '\n' ' ')"
    fi
  done
done
rm -rf "$SCRATCH/batho" "$SCRATCH/kuzu"
