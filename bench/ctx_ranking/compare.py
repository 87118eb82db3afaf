#!/usr/bin/env python3
"""Top-5 ranking of `batho ctx search` against SQLite FTS5 bm25 over the same texts.

Usage: compare.py NODES.jsonl QUERIES.tsv BATHO PROJECT

NODES.jsonl holds every node of the session graph (id, kind, status, text), as dumped by
run.sh. Every node with text goes into an FTS5 table (default unicode61 tokenizer); both
engines search the nodes `ctx search` lists by default (not superseded, pruned or a
session root). Relevant nodes are resolved from QUERIES.tsv by content (see its header),
never from either engine's answers.
"""

import json
import re
import sqlite3
import subprocess
import sys

TOP = 5
HIDDEN_STATUSES = ("superseded", "pruned")


def load_nodes(path):
    with open(path, encoding="utf-8") as lines:
        nodes = [json.loads(line) for line in lines if line.startswith("{")]
    return [n for n in nodes if n["text"] is not None]


def searchable(node):
    return node["status"] not in HIDDEN_STATUSES and node["kind"] != "session"


def definition(name):
    """A line at column 0 naming `name` before '(' that does not end as a prototype."""
    name = re.escape(name[:-1]) + r"\w*" if name.endswith("*") else re.escape(name)
    return re.compile(r"^(?![^\n]*\);[ \t]*$)[A-Za-z_][^\n;=]*?\b" + name + r"[ \t]*\(", re.M)


def relevant_ids(spec, nodes):
    ids = set()
    for item in spec.split(";"):
        kind, _, arg = item.partition(":")
        if kind == "def":
            pattern, pool = definition(arg), nodes
        elif kind == "note":
            pattern = re.compile(arg, re.I)
            pool = [n for n in nodes if n["kind"] == "note"]
        elif kind == "re":
            pattern, pool = re.compile(arg, re.M), nodes
        else:
            sys.exit(f"unknown relevance spec {item!r}")
        found = {n["id"] for n in pool if pattern.search(n["text"])}
        if not found:
            sys.exit(f"relevance spec {item!r} matches no searchable node")
        ids |= found
    return ids


def batho_top(batho, project, query):
    done = subprocess.run(
        [batho, "ctx", "search", query, "--limit", str(TOP), "--json", "--repo", project],
        capture_output=True, text=True)
    if done.returncode != 0:
        return [], done.stderr.strip().splitlines()[-1]
    return [r["id"] for r in json.loads(done.stdout)["results"]], None


def fts5_index(nodes):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    db.execute("CREATE TABLE meta(rowid INTEGER PRIMARY KEY, id TEXT, visible INTEGER)")
    for node in nodes:
        rowid = int(node["id"][1:])  # n42 -> 42: creation order
        db.execute("INSERT INTO t(rowid, text) VALUES (?, ?)", (rowid, node["text"]))
        db.execute("INSERT INTO meta VALUES (?, ?, ?)", (rowid, node["id"], searchable(node)))
    return db


def fts5_top(db, query):
    # Equal scores: newest first, as `ctx search` orders them.
    try:
        rows = db.execute(
            "SELECT meta.id FROM t JOIN meta ON meta.rowid = t.rowid "
            "WHERE t MATCH ? AND meta.visible ORDER BY bm25(t), t.rowid DESC LIMIT ?",
            (query, TOP)).fetchall()
    except sqlite3.OperationalError as error:
        return [], str(error)
    return [row[0] for row in rows], None


def rank(top, relevant):
    return next((i + 1 for i, node_id in enumerate(top) if node_id in relevant), None)


def main():
    nodes_path, queries_path, batho, project = sys.argv[1:5]
    nodes = load_nodes(nodes_path)
    visible = [n for n in nodes if searchable(n)]
    db = fts5_index(nodes)
    with open(queries_path, encoding="utf-8") as lines:
        queries = [line.rstrip("\n").split("\t") for line in lines
                   if line.strip() and not line.startswith("#")]

    engines = ("batho", "fts5")
    ranks = {e: [] for e in engines}
    print(f"{'type':7} {'query':40} {'rel':>3} {'batho':>5} {'fts5':>5}")
    for qtype, query, spec in queries:
        relevant = relevant_ids(spec, visible)
        answers = {"batho": batho_top(batho, project, query), "fts5": fts5_top(db, query)}
        row = []
        for engine in engines:
            top, error = answers[engine]
            ranks[engine].append(rank(top, relevant))
            row.append("err" if error else str(ranks[engine][-1] or "-"))
            if error:
                print(f"  {engine} error on {query!r}: {error}")
        print(f"{qtype:7} {query:40} {len(relevant):3} {row[0]:>5} {row[1]:>5}")

    count = len(queries)
    print(f"\n{count} queries over {len(visible)} searchable nodes "
          f"({len(nodes)} with text, {sum(n['kind'] == 'file_chunk' for n in visible)} file chunks); "
          "rank = position of the first relevant node in the top 5, '-' = none")
    for engine in engines:
        hits = sum(r is not None for r in ranks[engine])
        mrr = sum(1 / r for r in ranks[engine] if r) / count
        by_type = {}
        for (qtype, _, _), r in zip(queries, ranks[engine]):
            by_type.setdefault(qtype, []).append(r is not None)
        types = ", ".join(f"{t} {sum(v)}/{len(v)}" for t, v in by_type.items())
        print(f"{engine:6} top-5 hit rate {hits}/{count} = {hits / count:.3f}   "
              f"MRR@5 {mrr:.3f}   ({types})")
    print("\nqueries where they differ (rank batho / fts5):")
    for (qtype, query, _), b, f in zip(queries, ranks["batho"], ranks["fts5"]):
        if b != f:
            print(f"  {query:40} {b or '-'} / {f or '-'}")


if __name__ == "__main__":
    main()
