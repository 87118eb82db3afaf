#!/usr/bin/env bash
# Usage: bench/timeit.sh RUNS CMD [ARG...]  -> one warm-up run, then RUNS timed runs (GNU time);
# prints: median_wall_s=.. min=.. max=.. max_rss_kib=.. failed=..   (output of CMD is discarded)
# Adapted from /work/shared/corpora/timeit.sh; `failed` counts timed runs with a non-zero exit,
# so a crashing command is never mistaken for a fast one.
set -euo pipefail
N=$1; shift
"$@" >/dev/null 2>&1 || true
walls=(); rss=0; failed=0; tf=$(mktemp); trap 'rm -f "$tf"' EXIT
for _ in $(seq "$N"); do
  # Wall from the shell clock (ms resolution; GNU time's %e has only 10 ms), RSS from GNU time.
  t0=$(date +%s%N)
  /usr/bin/time -o "$tf" -f '%M' "$@" >/dev/null 2>&1 || failed=$((failed + 1))
  t1=$(date +%s%N)
  walls+=("$(awk -v d=$((t1 - t0)) 'BEGIN{printf "%.3f", d/1e9}')")
  r=$(tail -1 "$tf"); [[ "$r" =~ ^[0-9]+$ ]] && [ "$r" -gt "$rss" ] && rss=$r
done
printf '%s\n' "${walls[@]}" | sort -g | awk -v rss="$rss" -v failed="$failed" '{a[NR]=$1} END{m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "median_wall_s=%s min=%s max=%s max_rss_kib=%s failed=%s\n", m, a[1], a[NR], rss, failed}'
