#!/usr/bin/env bash
# One floor/build pair on one corpus, back to back so that both see the same machine:
# the tree-sitter parse floor (`parse_floor`), then `batho build --full --json` under GNU
# time. Prints the floor, the build's wall time, their ratio, the build's peak RSS and its
# phases. bench/run.sh does the same with the peers (ctags, cscope) and medians; this is the
# quick check used while working on the build's speed.
#
# Usage: bench/floor-pair.sh CORPUS_DIR
# Environment: BATHO, PARSE_FLOOR (default: <repo>/target/release/...), THREADS (default nproc).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
D=$(cd "${1:?usage: $0 CORPUS_DIR}" && pwd)
BATHO=${BATHO:-$REPO/target/release/batho}
PARSE_FLOOR=${PARSE_FLOOR:-$REPO/target/release/parse_floor}
THREADS=${THREADS:-$(nproc)}
[ -x /usr/bin/time ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; }

echo "start $(date -u +%H:%M:%S) UTC, $D, $THREADS threads, batho $BATHO"
t0=$(date +%s.%N)
floor=$("$PARSE_FLOOR" --threads "$THREADS" "$D")
t1=$(date +%s.%N)
floor_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')
echo "floor: wall_s=$floor_s $floor"

out=$(mktemp); tm=$(mktemp)
/usr/bin/time -f '%e %M' -o "$tm" "$BATHO" build --full --json "$D" >"$out"
read -r wall rss <"$tm"
python3 - "$out" "$wall" "$rss" "$floor_s" <<'PY'
import json, sys
report, wall, rss, floor = json.load(open(sys.argv[1])), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
phases = report.get("phases_ms", {})
print(f"build: wall_s={wall:.2f} ratio={wall / floor:.2f} peak_rss_kib={rss} "
      + " ".join(f"{k}={v / 1000:.2f}s" for k, v in phases.items()))
PY
rm -f "$out" "$tm"
echo "end $(date -u +%H:%M:%S) UTC"
