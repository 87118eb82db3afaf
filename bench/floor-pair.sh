#!/usr/bin/env bash
# One floor/build pair on one corpus, back to back so that both see the same machine:
# the tree-sitter parse floor (`parse_floor`), then `batho build --full --json` under GNU
# time. Prints the floor, the build's wall time, their ratio, the build's peak RSS and its
# phases, and the same ratio in CPU seconds (user + system), which varies far less than
# wall time on a shared machine. bench/run.sh does the same with the peers (ctags, cscope)
# and medians; this is the quick check used while working on the build's speed.
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
/usr/bin/time -f '%e %M %U %S' -o "$tm" "$BATHO" build --full --json "$D" >"$out"
read -r wall rss user sys <"$tm"
floor_cpu=$(sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' <<<"$floor")
python3 - "$out" "$wall" "$rss" "$floor_s" "$user" "$sys" "${floor_cpu:-0}" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
wall, rss, floor = float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
cpu, floor_cpu = float(sys.argv[5]) + float(sys.argv[6]), float(sys.argv[7])
phases = report.get("phases_ms", {})
cpu_ratio = f"{cpu / floor_cpu:.2f}" if floor_cpu > 0 else "n/a"
print(f"build: wall_s={wall:.2f} ratio={wall / floor:.2f} cpu_s={cpu:.2f} cpu_ratio={cpu_ratio} "
      f"peak_rss_kib={rss} " + " ".join(f"{k}={v / 1000:.2f}s" for k, v in phases.items()))
PY
rm -f "$out" "$tm"
echo "end $(date -u +%H:%M:%S) UTC"
