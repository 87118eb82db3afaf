#!/usr/bin/env bash
# Accuracy of batho's CALLS edges against clang's call graph, through the real CLI.
# Usage: bench/accuracy.sh CORPUS_DIR GROUND_TRUTH_DIR
#   GROUND_TRUTH_DIR comes from /work/shared/corpora/ground-truth-calls.sh (defs.tsv,
#   calls.tsv, calls_syntactic.tsv). BATHO: the batho binary (default target/release/batho).
#   COMPILE_COMMANDS: a compilation database to build with (`batho build --compile-commands`,
#   e.g. one carrying the -D flags and predefined macros clang used for the ground truth);
#   then only active code counts (`a.is_active`, `b.is_active`, no `Inactive` role).
# Prints: definitions found, recall against calls_syntactic.tsv (the calls written as
# `name(`) and against calls.tsv (every call after preprocessing, macros' included), and
# precision over the edges whose both ends clang defines (the unrestricted precision also
# counts edges into code clang did not compile, e.g. inactive #if branches).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BATHO=${BATHO:-$HERE/../target/release/batho}
CORPUS=$1; GT=$2
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
ACTIVE_CALL=""; ACTIVE_DEF=""
if [ -n "${COMPILE_COMMANDS:-}" ]; then
  "$BATHO" build --full --compile-commands "$COMPILE_COMMANDS" "$CORPUS" >/dev/null
  ACTIVE_CALL=" AND a.is_active AND b.is_active AND NOT has_role(r, 'Inactive')"
  ACTIVE_DEF=" WHERE f.is_active"
else
  "$BATHO" build --full "$CORPUS" >/dev/null
fi
"$BATHO" query --repo "$CORPUS" --format csv --limit-rows 10000000 \
  "MATCH (a)-[r:CALLS]->(b) WHERE (a:Function OR a:Method) AND (b:Function OR b:Method)$ACTIVE_CALL RETURN DISTINCT a.file, a.name, b.file, b.name" > "$TMP/calls.csv"
"$BATHO" query --repo "$CORPUS" --format csv --limit-rows 10000000 \
  "MATCH (f:Function)$ACTIVE_DEF RETURN DISTINCT f.file, f.name" > "$TMP/defs.csv"
python3 - "$TMP" "$GT" <<'PY'
import csv, sys
tmp, gt_dir = sys.argv[1], sys.argv[2]
def rows(path):
    with open(path, newline='') as f:
        r = csv.reader(f); next(r)
        return {tuple(x.strip() for x in row) for row in r}
def tsv(path):
    with open(path) as f:
        lines = f.read().splitlines()[1:]
    return [tuple(l.split('\t')) for l in lines]
ours, ours_defs = rows(f'{tmp}/calls.csv'), rows(f'{tmp}/defs.csv')
defs = {(d[0], d[2]) for d in tsv(f'{gt_dir}/defs.tsv')}
syn, allc = set(tsv(f'{gt_dir}/calls_syntactic.tsv')), set(tsv(f'{gt_dir}/calls.tsv'))
inside = {e for e in ours if (e[0], e[1]) in defs and (e[2], e[3]) in defs}
tp = len(inside & syn)
print(f'definitions_found={len(defs & ours_defs)}/{len(defs)}')
print(f'recall={tp / max(len(syn), 1):.4f} ({tp}/{len(syn)} calls_syntactic edges)')
tp_all = len(inside & allc)
print(f'recall_all_calls={tp_all / max(len(allc), 1):.4f} ({tp_all}/{len(allc)} calls edges)')
print(f'precision={len(inside & allc) / max(len(inside), 1):.4f} ({len(inside)} edges between clang-defined functions)')
print(f'precision_unrestricted={len(ours & allc) / max(len(ours), 1):.4f} ({len(ours)} edges)')
PY
