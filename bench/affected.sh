#!/usr/bin/env bash
# Accuracy of `batho affected` (the blast radius of a change) against clang's call graph.
# Usage: bench/affected.sh CORPUS_DIR GROUND_TRUTH_DIR [COUNT] [SEED] [DEPTH]
#   GROUND_TRUTH_DIR comes from /work/shared/corpora/ground-truth-calls.sh (defs.tsv,
#   calls.tsv, calls_syntactic.tsv). BATHO: the batho binary (default target/release/batho).
# Picks COUNT (default 20) functions with at least one caller at random (Python's
# random.Random(SEED), default seed 24, from the sorted definitions), runs
# `batho affected FILE:NAME --depth DEPTH --relation calls --json` for each (DEPTH default 3;
# RELATION=references or another impact relation instead of calls, RELATION= for all of them)
# and compares the functions it reports with the callers clang's call edges reach within
# DEPTH calls. Prints per function and overall (micro-averaged) precision and recall, against
# every call clang sees (calls.tsv, macro expansions included) and against the calls written
# in the source (calls_syntactic.tsv). Only entities clang defines as functions are compared:
# macros on the way are hops for batho, not results.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BATHO=${BATHO:-$HERE/../target/release/batho}
CORPUS=$1; GT=$2; COUNT=${3:-20}; SEED=${4:-24}; DEPTH=${5:-3}; RELATION=${RELATION-calls}
"$BATHO" status --repo "$CORPUS" >/dev/null 2>&1 || "$BATHO" build --full "$CORPUS" >/dev/null
python3 - "$BATHO" "$CORPUS" "$GT" "$COUNT" "$SEED" "$DEPTH" "$RELATION" <<'PY'
import json, random, subprocess, sys
from collections import defaultdict
batho, corpus, gt_dir = sys.argv[1:4]
count, seed, depth = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
RELATION = ['--relation', sys.argv[7]] if sys.argv[7] else []

def tsv(name):
    with open(f'{gt_dir}/{name}') as f:
        return [tuple(line.split('\t')) for line in f.read().splitlines()[1:]]

defs = {(row[0], row[2]) for row in tsv('defs.tsv')}
def callers_of(edges):
    callers = defaultdict(set)
    for caller_file, caller, callee_file, callee in edges:
        callers[(callee_file, callee)].add((caller_file, caller))
    return callers
every_call, written_calls = callers_of(tsv('calls.tsv')), callers_of(tsv('calls_syntactic.tsv'))

def reach(callers, start):
    seen, frontier = {start}, {start}
    for _ in range(depth):
        frontier = {c for f in frontier for c in callers.get(f, ())} - seen
        seen |= frontier
    return seen - {start}

candidates = sorted(f for f in defs if every_call.get(f))
picked = random.Random(seed).sample(candidates, count)
totals = {'all': [0, 0, 0], 'written': [0, 0, 0]}  # true positives, ours, truth
print(f'{"function":40} {"ours":>5} {"clang":>5} {"P":>6} {"R":>6} {"R(written)":>10}')
for file, name in picked:
    out = subprocess.run([batho, 'affected', f'{file}:{name}', '--repo', corpus, '--depth', str(depth),
                          *RELATION, '--json'], capture_output=True, text=True, check=True)
    ours = {(a['file'], a['name']) for a in json.loads(out.stdout)['affected']} & defs
    row = {}
    for key, callers in (('all', every_call), ('written', written_calls)):
        truth = reach(callers, (file, name))
        hit = len(ours & truth)
        totals[key][0] += hit; totals[key][1] += len(ours); totals[key][2] += len(truth)
        row[key] = (hit / len(ours) if ours else 1.0, hit / len(truth) if truth else 1.0, len(truth))
    print(f'{file + ":" + name:40} {len(ours):5} {row["all"][2]:5} {row["all"][0]:6.3f} {row["all"][1]:6.3f} {row["written"][1]:10.3f}')
for key in ('all', 'written'):
    hit, ours, truth = totals[key]
    print(f'{key} calls: precision={hit / max(ours, 1):.4f} recall={hit / max(truth, 1):.4f} ({hit} of {ours} ours, {truth} clang)')
PY
