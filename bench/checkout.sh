#!/usr/bin/env bash
# Usage: bench/checkout.sh REPO OTHER N [BATHO]
#
# A `git checkout` between two real releases, as a patch sees it: REPO is an indexed tree
# (its artifact current), OTHER another release of the same project. The script picks N of
# the C/C++ files that differ between the two (every k-th of the sorted list, so the pick
# is the same on every run), copies OTHER's version over REPO's (or deletes REPO's file,
# or adds OTHER's, as the checkout would), runs `batho patch REPO --json`, then puts REPO's
# own bytes back and patches again. N=all takes every differing file.
#
# Prints one line per patch: wall time (shell clock), peak RSS, the files changed (and how
# many of them the facts cache knew: the way back, or any run after the first, finds the
# other release's bytes there) and re-resolved, the bytes written and the phases. For a
# cold checkout, run it right after `batho build --full REPO`. REPO is left as it was
# found (its files; the artifact gains two generations, which `batho gc` reclaims).
set -euo pipefail
REPO=$(cd "$1" && pwd); OTHER=$(cd "$2" && pwd); N=$3
BATHO=${4:-$(dirname "$0")/../target/release/batho}
SAVE=$(mktemp -d); LIST=$(mktemp); TF=$(mktemp)
trap 'rm -rf "$SAVE" "$LIST" "$TF"' EXIT

# Differing source files, as paths relative to the trees (deletions and additions too).
{ diff -rq --exclude=.batho --exclude=.git "$REPO" "$OTHER" 2>/dev/null || true; } |
  awk -v a="$REPO/" -v b="$OTHER/" '
    /^Files / { p=$2; sub(a, "", p); print p; next }
    /^Only in / { d=$3; sub(/:$/, "", d); d=d "/" $4; sub(a, "", d); sub(b, "", d); print d }' |
  while IFS= read -r p; do # a folder only one side has: every file in it
    for t in "$REPO" "$OTHER"; do
      if [ -d "$t/$p" ]; then (cd "$t" && find "$p" -type f); continue 2; fi
    done
    echo "$p"
  done |
  grep -E '\.(c|h|cc|cpp|cxx|hh|hpp|hxx)$' | sort -u >"$LIST.all"
TOTAL=$(wc -l <"$LIST.all")
if [ "$N" = all ] || [ "$N" -ge "$TOTAL" ]; then cp "$LIST.all" "$LIST"
else awk -v n="$N" -v t="$TOTAL" 'int((NR-1)*n/t) != int(NR*n/t)' "$LIST.all" >"$LIST"; fi
rm -f "$LIST.all"
echo "checkout: $(wc -l <"$LIST") of $TOTAL differing source files"

# Keep REPO's own bytes (and mtimes) of every picked file, then lay OTHER's over them.
while IFS= read -r p; do
  if [ -e "$REPO/$p" ]; then mkdir -p "$SAVE/$(dirname "$p")"; cp -p "$REPO/$p" "$SAVE/$p"; fi
done <"$LIST"
swap() { # $1: source tree of the picked files
  while IFS= read -r p; do
    if [ -e "$1/$p" ]; then mkdir -p "$REPO/$(dirname "$p")"; cp -p "$1/$p" "$REPO/$p"
    else
      rm -f "$REPO/$p"
      # A folder the checkout brought in goes with its last file.
      rmdir -p --ignore-fail-on-non-empty "$(dirname "$REPO/$p")" 2>/dev/null || true
    fi
  done <"$LIST"
}
run() { # $1: label
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -o "$TF" -f '%M' "$BATHO" patch "$REPO" --json >"$TF.json"
  t1=$(date +%s%N)
  python3 - "$1" "$(( (t1 - t0) / 1000000 ))" "$(tail -1 "$TF")" "$TF.json" <<'EOF'
import json, sys
label, wall, rss, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
f = r.get("files", {})
print(f"{label}: wall {wall/1000:.2f} s, rss {rss/1024:.0f} MiB, "
      f"{len(f.get('added',[]))} added {len(f.get('modified',[]))} modified {len(f.get('deleted',[]))} deleted "
      f"({r.get('changed_cached',0)} from the facts cache), "
      f"{len(r.get('affected_files',[]))} re-resolved, {r.get('context_files')} context, "
      f"{r.get('bytes_written',0)/1e6:.1f} MB written, phases {r.get('phases')}")
EOF
  rm -f "$TF.json"
}
trap 'swap "$SAVE"; rm -rf "$SAVE" "$LIST" "$TF"' EXIT
swap "$OTHER"
run checkout
swap "$SAVE"
run "back"
