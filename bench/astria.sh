#!/usr/bin/env bash
# The Astria targets of issue 24 on one built repository (the Linux 6.1 artifact), whole
# process through the CLI (bench/timeit.sh: one warm-up, RUNS timed runs, median), the
# warm MCP round trips through bench's mcp_roundtrip, and where named files land in
# algo.file_rank (the repo_map ranking).
# Usage: bench/astria.sh REPO [NODE_ID] [FUNCTION_NAME]
#   e.g. bench/astria.sh /work/corpora/linux-6.1.192 kernel/locking/mutex.c:mutex_lock mutex_lock
# BATHO, MCP_ROUNDTRIP: the binaries (default target/release/…); RUNS (default 5);
# FILES: the files to place in the ranking (default: the kernel's named in the issue).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BATHO=${BATHO:-$HERE/../target/release/batho}
MCP_ROUNDTRIP=${MCP_ROUNDTRIP:-$HERE/../target/release/mcp_roundtrip}
RUNS=${RUNS:-5}
REPO=${1:?usage: $0 REPO [NODE_ID] [FUNCTION_NAME]}
NODE=${2:-kernel/locking/mutex.c:mutex_lock}
NAME=${3:-mutex_lock}
FILES=${FILES:-kernel/sched/core.c kernel/locking/mutex.c mm/slab_common.c mm/page_alloc.c fs/namei.c include/linux/fs.h include/linux/sched.h include/linux/mm_types.h}
row() { printf '%-44s %s\n' "$1" "$("$HERE/timeit.sh" "$RUNS" "${@:2}")"; }
row "map --budget 2000" "$BATHO" map --budget 2000 --repo "$REPO"
row "ask 'where is $NAME used' --budget 2000" "$BATHO" ask "where is $NAME used" --budget 2000 --repo "$REPO"
row "affected $NODE --depth 3" "$BATHO" affected "$NODE" --depth 3 --repo "$REPO"
row "health" "$BATHO" health --repo "$REPO"
row "communities" "$BATHO" communities --repo "$REPO"
echo "mcp (warm, 50 calls each): $("$MCP_ROUNDTRIP" --batho "$BATHO" --calls 50 "$REPO" "$NAME")"
ranks=$("$BATHO" query --repo "$REPO" --format csv "CALL algo.file_rank(100000) YIELD file RETURN file")
for f in $FILES; do
  place=$(printf '%s\n' "$ranks" | tr -d '\r' | tail -n +2 | grep -nxF "$f" | cut -d: -f1 || true)
  echo "file_rank $f: ${place:-not ranked}"
done
"$BATHO" map --budget 2000 --repo "$REPO" | grep -E '^[^ ].*:$' | head -20 | tr '\n' ' '; echo
