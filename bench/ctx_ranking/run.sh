#!/usr/bin/env bash
# Top-5 hit rate and MRR of `batho ctx search` against SQLite FTS5 bm25, same texts, one run.
#
# Usage: bench/ctx_ranking/run.sh CORPUS_DIR
#   CORPUS_DIR  a Lua 5.4 source folder (the .c files named in session.txt), read in place
#   BATHO_BIN_DIR  folder holding batho and batho-ql (default: found on PATH)
#   TMPDIR         where the scratch session goes (removed at exit unless KEEP=1)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
corpus=$(cd "${1:?usage: run.sh CORPUS_DIR}" && pwd)
batho=${BATHO_BIN_DIR:+$BATHO_BIN_DIR/}batho
batho_ql=${BATHO_BIN_DIR:+$BATHO_BIN_DIR/}batho-ql

work=$(mktemp -d "${TMPDIR:-/tmp}/ctx_ranking.XXXXXX")
if [[ -z ${KEEP:-} ]]; then trap 'rm -rf "$work"' EXIT; else echo "keeping $work"; fi
export BATHO_HOME=$work/home
project=$work/project
mkdir -p "$project"

# The project: a copy of the files the session reads (greps search all of them).
for file in $(awk '$1 == "read" {print $2}' "$here/session.txt" | sort -u); do
  cp "$corpus/$file" "$project/$file"
done

# Record the session: reads, notes, greps and one re-read of an edited file.
while read -r verb arg; do
  case $verb in
    ''|'#'*) continue ;;
    read) "$batho" ctx read "$arg" --repo "$project" >/dev/null ;;
    note) "$batho" ctx note "$arg" --repo "$project" >/dev/null ;;
    grep) "$batho" ctx grep "$arg" --repo "$project" >/dev/null ;;
    edit) echo "/* edited during the session */" >>"$project/$arg" ;;
    *) echo "session.txt: unknown step '$verb'" >&2; exit 1 ;;
  esac
done <"$here/session.txt"

# Dump every node (id, kind, status, text) of the session graph.
graph=$(echo "$BATHO_HOME"/ctx/*/)
printf '%s\n' ':format jsonl' \
  'MATCH (n:Ctx) RETURN n.id AS id, n.kind AS kind, n.status AS status, n.text AS text ORDER BY id(n);' |
  "$batho_ql" "$graph" >"$work/nodes.jsonl"

echo "$("$batho" --version), SQLite $(python3 -c 'import sqlite3; print(sqlite3.sqlite_version)') FTS5, corpus $corpus"
python3 "$here/compare.py" "$work/nodes.jsonl" "$here/queries.tsv" "$batho" "$project"
