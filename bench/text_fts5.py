#!/usr/bin/env python3
"""Checks `CALL text.search` against SQLite FTS5 on the same documents.

Usage: bench/text_fts5.py BATHO REPO [QUESTION ...]

Exports every node of REPO's artifact (name, qualified name when it differs, signature,
file path) with `BATHO query`, cuts each field into terms as Batho's tokenizer does
(storage/src/text/tokenize.rs, re-implemented below), loads the term lists into an FTS5
table (tokenize = unicode61 with `_` as a token character, so each term stays one
token) and, for each question, compares FTS5's `bm25()` ranking (negated) with Batho's:
the same documents in the same order (documents of equal score compared as sets) and
the same scores to 1e-9. Exits 1 on the first difference.
"""

import csv
import io
import sqlite3
import subprocess
import sys

DEFAULT_QUESTIONS = [
    "where is the hash of a table key computed",
    "lua_pushnil stack",
    "garbage collector mark",
    "open file read buffer",
    "string table resize",
    "parse expression",
]
TOP = 20


def char_class(c):
    if c == "_":
        return "underscore"
    if c.isnumeric():
        return "digit"
    if c.isupper():
        return "upper"
    return "lower"


def boundary_before(previous, current, following):
    if previous == "lower" and current == "upper":
        return True
    if previous in ("upper", "lower") and current == "digit":
        return True
    if previous == "digit" and current in ("upper", "lower"):
        return True
    return previous == "upper" and current == "upper" and following == "lower"


def parts(run):
    classes = [char_class(c) for c in run]
    out, start = [], None
    for k, cls in enumerate(classes):
        if cls == "underscore":
            if start is not None:
                out.append(run[start:k])
                start = None
            continue
        if start is None:
            start = k
        elif boundary_before(classes[k - 1], cls, classes[k + 1] if k + 1 < len(classes) else None):
            out.append(run[start:k])
            start = k
    if start is not None:
        out.append(run[start:])
    return out


def terms(text):
    out, run = [], ""
    for c in text + " ":
        if c == "_" or c.isalnum():
            run += c
            continue
        if run and not run[0].isnumeric():
            found = parts(run)
            out.extend(p.lower() for p in found if not p.isnumeric())
            if len(found) > 1 or (len(found) == 1 and found[0] != run):
                out.append(run.lower())
        run = ""
    return out


def query_csv(batho, repo, text, params=()):
    args = [batho, "query", "--repo", repo, "--format", "csv"]
    for name, value in params:
        args += ["-p", f"{name}={value}"]
    out = subprocess.run(args + [text], check=True, capture_output=True, text=True).stdout
    return list(csv.reader(io.StringIO(out)))[1:]


def load_fts5(rows):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(node_id UNINDEXED, body, "
               "tokenize = \"unicode61 remove_diacritics 0 tokenchars '_'\")")
    for node_id, name, qualified, signature, path in rows:
        fields = [name] + ([qualified] if qualified != name else []) + [signature, path]
        body = " ".join(t for field in fields for t in terms(field))
        db.execute("INSERT INTO docs VALUES (?, ?)", (node_id, body))
    return db


def grouped(ranked):
    """[(score, {ids})] in score order, scores rounded to compare across engines."""
    groups = []
    for node_id, score in ranked:
        key = round(score, 9)
        if groups and groups[-1][0] == key:
            groups[-1][1].add(node_id)
        else:
            groups.append((key, {node_id}))
    return groups


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    batho, repo = sys.argv[1], sys.argv[2]
    questions = sys.argv[3:] or DEFAULT_QUESTIONS
    rows = query_csv(batho, repo, "MATCH (n) RETURN n.id, n.name, n.qualified_name, n.signature, n.file")
    db = load_fts5(rows)
    print(f"{len(rows)} documents")
    for question in questions:
        distinct = list(dict.fromkeys(terms(question)))
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in distinct)
        # Every tie at the cut is fetched, so that the cut itself is not compared.
        fts = [(i, -s) for i, s in db.execute(
            "SELECT node_id, bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs)", (match,))]
        ours = [(i, float(s)) for i, s in query_csv(
            batho, repo, "CALL text.search($q, $k) YIELD node, score RETURN node.id, score",
            [("q", question), ("k", str(len(fts) + 1))])]
        same = grouped(fts)[:TOP] == grouped(ours)[:TOP] and len(fts) == len(ours)
        top = ", ".join(f"{i} {s:.4f}" for i, s in ours[:3])
        print(f"{'same' if same else 'DIFFERENT'}: {question!r}: {len(ours)} matches; top {top}")
        if not same:
            print("  fts5:", fts[:5], "\n  batho:", ours[:5])
            sys.exit(1)


if __name__ == "__main__":
    main()
