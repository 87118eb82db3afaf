#!/usr/bin/env python3
"""Kùzu side of the BQL-vs-Kùzu comparison on a call graph exported from a Batho artifact.

Three sub-commands, so that the same script serves the in-process timing and the
whole-process (hyperfine) timing:

  load  NODES_CSV EDGES_CSV DB       create a Kùzu database from the exported CSVs and print
                                     its node and edge counts
  bench DB [--runs N] [--json OUT]   in-process medians of the three queries, one reused
                                     connection, after a warm-up; prints each query's result
                                     (the rows compared against BQL by run.sh)
  once  DB QUERY                     open the database, run one query, print its result
                                     (what hyperfine times as a whole process)

The query names and their parameters are the ones the corpora README quotes for Lua.
"""

import argparse
import json
import statistics
import sys
import time
import warnings

import kuzu

# Names are passed as parameters: the same shape as the BQL side, which also uses `$name`.
QUERIES = {
    "callers": (
        "MATCH (c:Function)-[:CALLS]->(f:Function {name: $name}) RETURN c.id",
        {"name": "luaD_call"},
    ),
    "callees3": (
        "MATCH (f:Function {name: $name})-[:CALLS*1..3]->(g:Function) RETURN DISTINCT g.id",
        {"name": "lua_pcallk"},
    ),
    "shortest": (
        "MATCH p = (a:Function {name: $src})-[:CALLS* SHORTEST 1..10]->(b:Function {name: $dst}) "
        "RETURN a.id, b.id, length(p)",
        {"src": "lua_pcallk", "dst": "luaH_resize"},
    ),
}


def run(conn, name, prepared=None):
    query, params = QUERIES[name]
    return conn.execute(prepared if prepared is not None else query, params).get_all()


def summary(name, rows):
    """One line a shell can compare with the BQL side's answer."""
    if name == "callers":
        return "callers " + " ".join(sorted(r[0] for r in rows))
    if name == "callees3":
        return f"callees3 {len({r[0] for r in rows})}"
    return "shortest " + " ".join(sorted(f"{r[0]}->{r[1]}:{r[2]}" for r in rows))


def cmd_load(args):
    db = kuzu.Database(args.db)
    conn = kuzu.Connection(db)
    conn.execute("CREATE NODE TABLE Function(id STRING, name STRING, file STRING, PRIMARY KEY (id))")
    conn.execute("CREATE REL TABLE CALLS(FROM Function TO Function)")
    conn.execute(f"COPY Function FROM '{args.nodes}' (header=true)")
    conn.execute(f"COPY CALLS FROM '{args.edges}' (header=true)")
    nodes = conn.execute("MATCH (f:Function) RETURN count(*)").get_all()[0][0]
    edges = conn.execute("MATCH ()-[r:CALLS]->() RETURN count(*)").get_all()[0][0]
    print(f"kuzu nodes={nodes} edges={edges}")


def cmd_bench(args):
    db = kuzu.Database(args.db, read_only=True)
    conn = kuzu.Connection(db)
    out = {"kuzu_version": kuzu.__version__, "runs": args.runs, "queries": {}}
    for name in QUERIES:
        rows = run(conn, name)
        # `execute(text)` parses and plans on every call; a prepared statement is Kùzu's
        # counterpart of BQL's plan cache, so both are timed.
        with warnings.catch_warnings():
            # 0.11.3 marks prepare() deprecated; it is still the way to reuse a plan.
            warnings.simplefilter("ignore", DeprecationWarning)
            prepared = conn.prepare(QUERIES[name][0])
        out["queries"][name] = {"rows": len(rows)}
        for mode, stmt in (("text", None), ("prepared", prepared)):
            for _ in range(args.warmup):
                run(conn, name, stmt)
            times = []
            for _ in range(args.runs):
                t = time.perf_counter_ns()
                run(conn, name, stmt)
                times.append(time.perf_counter_ns() - t)
            times.sort()
            med = statistics.median(times) / 1e6
            p90 = times[len(times) * 9 // 10] / 1e6
            out["queries"][name][mode] = {"median_ms": med, "p90_ms": p90}
            print(
                f"{name:<10} {mode:<9} rows={len(rows):<5} median={med:.3f} ms p90={p90:.3f} ms",
                file=sys.stderr,
            )
        print(summary(name, rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


def cmd_once(args):
    db = kuzu.Database(args.db, read_only=True)
    conn = kuzu.Connection(db)
    print(summary(args.query, run(conn, args.query)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    load = sub.add_parser("load")
    load.add_argument("nodes")
    load.add_argument("edges")
    load.add_argument("db")
    bench = sub.add_parser("bench")
    bench.add_argument("db")
    bench.add_argument("--runs", type=int, default=500)
    bench.add_argument("--warmup", type=int, default=50)
    bench.add_argument("--json")
    once = sub.add_parser("once")
    once.add_argument("db")
    once.add_argument("query", choices=sorted(QUERIES))
    args = p.parse_args()
    {"load": cmd_load, "bench": cmd_bench, "once": cmd_once}[args.cmd](args)


if __name__ == "__main__":
    main()
