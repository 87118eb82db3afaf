#!/usr/bin/env bash
# Usage: bench/onefile.sh REPO FILE [BATHO]
#
# The everyday patch: one edited C file of an indexed tree. Three rounds, each followed by
# `batho patch REPO --json` under GNU time: a function appended to FILE, that function
# changed, then removed (FILE's own bytes put back). Prints one line per patch: wall time,
# peak RSS, bytes written (and their share of the artifact) and the phases. REPO is left as
# it was found (its files; the artifact gains three generations, which `batho gc` reclaims).
set -euo pipefail
REPO=$(cd "$1" && pwd); FILE=$2
BATHO=${3:-$(dirname "$0")/../target/release/batho}
[ -f "$REPO/$FILE" ] || { echo "no $REPO/$FILE" >&2; exit 2; }
[ -x /usr/bin/time ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; }
SAVE=$(mktemp); OUT=$(mktemp); TM=$(mktemp)
cp -p "$REPO/$FILE" "$SAVE"
trap 'cp -p "$SAVE" "$REPO/$FILE"; rm -f "$SAVE" "$OUT" "$TM"' EXIT

patch_once() { # label
  /usr/bin/time -f '%e %M' -o "$TM" "$BATHO" patch "$REPO" --json >"$OUT"
  read -r wall rss <"$TM"
  python3 - "$1" "$OUT" "$wall" "$rss" <<'PY'
import json, sys
label, out, wall, rss = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
r = json.load(open(out))
written, size = r.get("bytes_written", 0), r.get("artifact_bytes", 0) or 1
e = r.get("entities", {})
changes = " ".join(f"{k} {e.get(k, 0)}" for k in ("added", "modified", "removed", "renamed"))
print(f"{label}: wall {wall:.2f} s, rss {rss // 1024} MiB, entities {changes},"
      f" written {written / 1e3:.1f} kB ({100 * written / size:.3f} % of {size / 1e6:.0f} MB),"
      f" phases {r.get('phases', {})}")
PY
}

{ cat "$SAVE"; printf '\nint batho_bench_added(int x)\n{\n\treturn x + 1;\n}\n'; } >"$REPO/$FILE"
patch_once append
{ cat "$SAVE"; printf '\nint batho_bench_added(int x)\n{\n\treturn x * 2 + 1;\n}\n'; } >"$REPO/$FILE"
patch_once change
cp -p "$SAVE" "$REPO/$FILE"
touch "$REPO/$FILE"
patch_once remove
