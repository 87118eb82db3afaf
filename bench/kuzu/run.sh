#!/usr/bin/env bash
# BQL against Kùzu 0.11.3 on the same Lua call graph, in the same run.
#
#   bench/kuzu/run.sh CORPORA SCRATCH
#
# CORPORA holds lua-5.4.9 (from /work/shared/corpora/get-corpora.sh); SCRATCH receives the
# exported CSVs, the Kùzu database, the query scripts and the hyperfine JSON. Environment:
#   BATHO        the batho binary (default: target/release/batho of this workspace)
#   QUERY_BENCH  the engine's `query` bench binary (target/release/deps/query-<hash>, made
#                by `cargo bench -p batho-engine --bench query --no-run`); found by glob if unset
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

echo "== BQL in-process (engine bench harness, plan cache warm, 2000 runs)"
if [ -z "${QUERY_BENCH:-}" ]; then
    QUERY_BENCH=$(ls -t "$ROOT"/target*/release/deps/query-* 2>/dev/null | grep -v '\.d$' | head -1 || true)
fi
if [ -n "$QUERY_BENCH" ] && [ -x "$QUERY_BENCH" ]; then
    echo "($QUERY_BENCH)"
    "$QUERY_BENCH" --bench "$REPO" luaD_call | sed 's/^/luaD_call:  /'
    "$QUERY_BENCH" --bench "$REPO" lua_pcallk | sed 's/^/lua_pcallk: /'
else
    echo "no query bench binary: build it with cargo bench -p batho-engine --bench query --no-run"
fi

# The exact three queries in-process without the bench harness: one `batho query -f`
# process runs N copies of a statement, and (median(N=41) - median(N=1)) / 40 is the cost of
# one more statement. Each statement's text is prefixed by the earlier ones blanked to
# spaces (for diagnostics' line numbers), so the texts differ and every copy misses the plan
# cache: this is parse + plan + execute + CSV printing, the counterpart of Kùzu's
# execute(text). `RETURN 1` gives the fixed per-statement cost.
echo "== BQL in-process, plan cache cold (script of N statements, N = 1 and 41)"
echo 'RETURN 1' > ret.bql
PARAMS[ret]=""
cmds=()
for n in ret callers callees3 shortest; do
    for k in 1 41; do
        for _ in $(seq $k); do tr '\n' ' ' < $n.bql; echo ';'; done > $n.x$k.bql
        cmds+=("$BATHO query --repo $REPO --format csv ${PARAMS[$n]} -f $SCRATCH/$n.x$k.bql")
    done
done
hyperfine -N --warmup 3 --min-runs 100 --export-json slope.json --output=null "${cmds[@]}" > slope.txt 2>&1
"$PY" - <<'EOF'
import json
r = json.load(open("slope.json"))["results"]
for i in range(0, len(r), 2):
    name = r[i]["command"].split()[-1].rsplit("/", 1)[-1].split(".")[0]
    print(f"{name:<10} {(r[i + 1]['median'] - r[i]['median']) / 40 * 1e3:.3f} ms per statement")
EOF

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
