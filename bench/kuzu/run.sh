#!/usr/bin/env bash
# BQL against Kùzu 0.11.3 on the same Lua call graph, in the same run.
#
#   bench/kuzu/run.sh CORPORA SCRATCH
#
# CORPORA holds lua-5.4.9 (from /work/shared/corpora/get-corpora.sh); SCRATCH receives the
# exported CSVs, the Kùzu database, the query scripts and the hyperfine JSON. Environment:
#   BATHO        the batho binary (default: target/release/batho of this workspace)
#   BQL_LATENCY  the in-process BQL timer (default target/release/bql_latency, from
#                `cargo build --release -p batho-bench`)
#   KUZU_VENV    the venv holding kuzu==0.11.3 (default /work/kuzu-venv; created if missing)
#   RUNS         in-process runs per Kùzu query (default 500, after 50 warm-up runs)
# Needs hyperfine (Debian: apt-get install -y hyperfine) for the whole-process figures.
set -euo pipefail

CORPORA=${1:?usage: run.sh CORPORA SCRATCH}
SCRATCH=${2:?usage: run.sh CORPORA SCRATCH}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BATHO=${BATHO:-$ROOT/target/release/batho}
KUZU_VENV=${KUZU_VENV:-/work/kuzu-venv}
RUNS=${RUNS:-500}
REPO=$CORPORA/lua-5.4.9
PY=$KUZU_VENV/bin/python
mkdir -p "$SCRATCH"
SCRATCH=$(cd "$SCRATCH" && pwd)
cd "$SCRATCH"

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"

if ! "$PY" -c 'import kuzu, sys; sys.exit(kuzu.__version__ != "0.11.3")' 2>/dev/null; then
    python3 -m venv "$KUZU_VENV"
    "$KUZU_VENV/bin/pip" install -q kuzu==0.11.3
fi

echo "== build"
"$BATHO" build --full "$REPO" | tail -1

echo "== export Function/Method nodes and the CALLS edges between them"
# The CSV output is RFC 4180: CRLF line ends, dropped here for the shell comparisons.
q() { "$BATHO" query --repo "$REPO" --format csv "$@" | tr -d '\r'; }
{
    q 'MATCH (f:Function) RETURN f.id AS id, f.name AS name, f.file AS file'
    q 'MATCH (f:Method) RETURN f.id AS id, f.name AS name, f.file AS file' | tail -n +2
} > nodes.csv
q 'MATCH (a)-[:CALLS]->(b) WHERE (a:Function OR a:Method) AND (b:Function OR b:Method)
   RETURN a.id AS src, b.id AS dst' > edges.csv
ours_nodes=$(q 'MATCH (f) WHERE f:Function OR f:Method RETURN count(*)' | tail -1)
ours_edges=$(q 'MATCH (a)-[r:CALLS]->(b) WHERE (a:Function OR a:Method) AND (b:Function OR b:Method)
   RETURN count(r)' | tail -1)
echo "batho nodes=$ours_nodes edges=$ours_edges"

rm -rf kuzu-db && mkdir kuzu-db
kz=$("$PY" "$HERE/kuzu_bench.py" load "$SCRATCH/nodes.csv" "$SCRATCH/edges.csv" kuzu-db/lua.kuzu)
echo "$kz"
[ "$kz" = "kuzu nodes=$ours_nodes edges=$ours_edges" ] || { echo "MISMATCH: graph sizes differ"; exit 1; }

# The three queries, BQL side: one single-statement file each, parameters as in Kùzu.
cat > callers.bql <<'EOF'
MATCH (c:Function)-[:CALLS]->(f:Function {name: $name}) RETURN c.id
EOF
cat > callees3.bql <<'EOF'
MATCH (f:Function {name: $name})-[:CALLS*1..3]->(g:Function) RETURN DISTINCT g.id
EOF
cat > shortest.bql <<'EOF'
MATCH p = shortestPath((a:Function {name: $src})-[:CALLS*..10]->(b:Function {name: $dst}))
RETURN a.id, b.id, length(p)
EOF
declare -A PARAMS=(
    [callers]="-p name=luaD_call"
    [callees3]="-p name=lua_pcallk"
    [shortest]="-p src=lua_pcallk -p dst=luaH_resize"
)

echo "== same rows in both engines"
{
    echo "callers $(q ${PARAMS[callers]} -f callers.bql | tail -n +2 | sort | tr '\n' ' ' | sed 's/ $//')"
    echo "callees3 $(q ${PARAMS[callees3]} -f callees3.bql | tail -n +2 | sort -u | wc -l)"
    echo "shortest $(q ${PARAMS[shortest]} -f shortest.bql | tail -n +2 | tr ',' ' ' \
        | awk '{print $1 "->" $2 ":" $3}' | sort | tr '\n' ' ' | sed 's/ $//')"
} > ours.txt

echo "== Kùzu in-process ($RUNS runs after warm-up, one connection)"
"$PY" "$HERE/kuzu_bench.py" bench kuzu-db/lua.kuzu --runs "$RUNS" --json kuzu-inproc.json > kuzu.txt
cat ours.txt
if diff ours.txt kuzu.txt; then echo "results: equal"; else echo "MISMATCH: results differ (above)"; fi

echo "== BQL in-process (bql_latency: the exact texts above, 2000 runs, plan cache warm and cold)"
# Cold: every run's text differs by a trailing comment, so it is parsed, checked and planned
# again: the counterpart of Kùzu's execute(text). Warm: the plan cache hit of a repeated text.
BQL_LATENCY=${BQL_LATENCY:-$ROOT/target/release/bql_latency}
if [ -x "$BQL_LATENCY" ]; then
    "$BQL_LATENCY" "$REPO" callers.bql name=luaD_call | sed 's/^/callers:  /'
    "$BQL_LATENCY" "$REPO" callees3.bql name=lua_pcallk | sed 's/^/callees3: /'
    "$BQL_LATENCY" "$REPO" shortest.bql src=lua_pcallk dst=luaH_resize | sed 's/^/shortest: /'
else
    echo "no bql_latency binary: build it with cargo build --release -p batho-bench"
fi

echo "== whole process (hyperfine, median of >= 50 runs)"
cmds=()
for n in callers callees3 shortest; do
    cmds+=("$BATHO query --repo $REPO --format csv ${PARAMS[$n]} -f $SCRATCH/$n.bql")
    cmds+=("$PY $HERE/kuzu_bench.py once $SCRATCH/kuzu-db/lua.kuzu $n")
done
hyperfine -N --warmup 5 --min-runs 50 --export-json whole.json --output=null "${cmds[@]}" > hyperfine.txt
"$PY" - <<'EOF'
import json
r = json.load(open("whole.json"))["results"]
for i in range(0, len(r), 2):
    ours, kz = r[i]["median"] * 1e3, r[i + 1]["median"] * 1e3
    name = r[i + 1]["command"].split()[-1]
    print(f"{name:<10} batho {ours:8.2f} ms   kuzu {kz:8.2f} ms   kuzu/batho {kz / ours:6.1f}x")
EOF
echo "== done $(date -u '+%H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
