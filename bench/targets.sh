#!/usr/bin/env bash
# The two resolution targets of issue 2 that name a corpus, checked against clang through
# the real CLI (ground truth from /work/shared/corpora/ground-truth-calls.sh):
#   sqlite  CORPUS GT  callers of sqlite3_mutex_enter: how many of clang's batho finds, and
#                      how many more it reports (calls in code this configuration disables)
#   statics CORPUS GT  zstd/lib's names defined in several files (statics): of clang's
#                      syntactic call edges into them (calls_syntactic.tsv), how many batho
#                      has exactly (caller and callee file), and how many edges batho adds
#                      from those callers to a same-name definition in a file clang did not
#                      call (whether that file is in the caller's unit is left to the reader)
# Usage: bench/targets.sh sqlite /work/corpora/sqlite-3.54.1 /work/gt-sqlite
#        bench/targets.sh statics /work/corpora/zstd-1.5.7/lib /work/gt-zstd
# GT for zstd: ground-truth-calls.sh LIB OUT -- -std=gnu11 -I LIB -I LIB/common.
# BATHO: the batho binary (default target/release/batho).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BATHO=${BATHO:-$HERE/../target/release/batho}
MODE=${1:?usage: $0 sqlite|statics CORPUS GT}; CORPUS=${2:?corpus}; GT=${3:?ground truth dir}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
"$BATHO" build --full "$CORPUS" >/dev/null
"$BATHO" query --repo "$CORPUS" --format csv --limit-rows 10000000 \
  "MATCH (a)-[:CALLS]->(b) WHERE (a:Function OR a:Method) AND (b:Function OR b:Method) RETURN DISTINCT a.file, a.name, b.file, b.name" >"$TMP/calls.csv"
python3 - "$MODE" "$TMP/calls.csv" "$GT" <<'PY'
import csv, sys
from collections import Counter
mode, ours_csv, gt = sys.argv[1:]
with open(ours_csv, newline='') as f:
    rows = list(csv.reader(f))[1:]
ours = {tuple(x.strip() for x in r) for r in rows}
def tsv(name):
    with open(f'{gt}/{name}') as f:
        return [tuple(l.split('\t')) for l in f.read().splitlines()[1:]]
calls = set(tsv('calls.tsv'))
if mode == 'sqlite':
    name = 'sqlite3_mutex_enter'
    theirs = {(e[0], e[1]) for e in calls if e[3] == name}
    mine = {(e[0], e[1]) for e in ours if e[3] == name}
    print(f'{name}: clang_callers={len(theirs)} found={len(theirs & mine)} '
          f'missed={len(theirs - mine)} more={len(mine - theirs)}')
    for c in sorted(theirs - mine):
        print('  missed', *c)
elif mode == 'statics':
    defs = tsv('defs.tsv')
    files_of = {}
    for d in defs:
        files_of.setdefault(d[2], set()).add(d[0])
    several = {n for n, fs in files_of.items() if len(fs) > 1}
    want = {e for e in tsv('calls_syntactic.tsv') if e[3] in several}
    have = want & ours
    callers = {(e[0], e[1], e[3]) for e in want}
    wrong = {e for e in ours if (e[0], e[1], e[3]) in callers and e not in calls}
    print(f'same-name names={len(several)} clang_syntactic_edges={len(want)} found={len(have)} '
          f'missed={len(want - have)} other_file_edges={len(wrong)}')
    for e in sorted(want - have)[:20]:
        print('  missed', *e)
    for e in sorted(wrong)[:20]:
        print('  other file', *e)
else:
    sys.exit(f'unknown mode {mode}')
PY
