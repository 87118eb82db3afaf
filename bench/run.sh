#!/usr/bin/env bash
# Batho build benchmark: for each corpus, times (in the same run, so machine noise hits all
# alike) universal-ctags, cscope, the tree-sitter parse floor and `batho build --full`, then
# prints a markdown table of medians and ratios. See bench/README.md.
#
# Usage: bench/run.sh CORPORA_DIR SCRATCH_DIR [CORPUS...]
#   CORPUS defaults to every lua-*, sqlite-*, zstd-*, rocksdb-* and linux-* folder present.
# Environment:
#   RUNS          timed runs per measurement (default 5; one warm-up run is added)
#   RUNS_LARGE    runs for linux-* corpora (default 1)
#   THREADS       threads for parse_floor (default: nproc)
#   BATHO         batho binary (default: <repo>/target/release/batho)
#   BATHO_ARGS    arguments before the corpus path (default: "build --full")
#   PARSE_FLOOR   parse_floor binary (default: <repo>/target/release/parse_floor)
#   OPEN_LOOKUP   open_lookup binary (default: <repo>/target/release/open_lookup)
#   TIMEIT        timing script (default: bench/timeit.sh)
# Needs GNU time, universal-ctags and cscope (apt-installed here if missing).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
[ $# -ge 2 ] || { sed -n '5,17p' "$0" >&2; exit 2; }
C=$(cd "$1" && pwd); S=$2; shift 2
mkdir -p "$S"; S=$(cd "$S" && pwd)
TIMEIT=${TIMEIT:-$HERE/timeit.sh}
THREADS=${THREADS:-$(nproc)}
BATHO=${BATHO:-$REPO/target/release/batho}
BATHO_ARGS=${BATHO_ARGS:-build --full}
PARSE_FLOOR=${PARSE_FLOOR:-$REPO/target/release/parse_floor}
OPEN_LOOKUP=${OPEN_LOOKUP:-$REPO/target/release/open_lookup}
# query symbol per corpus (as in the shared anchor-tools.sh): a widely called function
qsym() { case $1 in lua-*) echo luaD_call;; sqlite-*) echo sqlite3_mutex_enter;; zstd-*) echo ZSTD_isError;;
 rocksdb-*) echo PutFixed32;; linux-*) echo mutex_lock;; *) echo main;; esac; }

command -v ctags >/dev/null && command -v cscope >/dev/null && [ -x /usr/bin/time ] || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq universal-ctags cscope time >/dev/null; }

CORPORA=("$@")
[ ${#CORPORA[@]} -gt 0 ] || CORPORA=($(cd "$C" && ls -d lua-* sqlite-* zstd-* rocksdb-* linux-* 2>/dev/null || true))
[ ${#CORPORA[@]} -gt 0 ] || { echo "no corpora in $C" >&2; exit 1; }

LOG="$S/run.log"; : >"$LOG"
log() { echo "$*" | tee -a "$LOG" >&2; }
# field NAME LINE -> value of NAME=value in LINE
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
size_of() { { du -sb "$@" 2>/dev/null || true; } | awk '{s+=$1; n++} END{print (n ? s : "-")}'; }
human() { awk -v b="$1" 'BEGIN{ if (b=="" || b=="-") {print "—"; exit}
  split("B KiB MiB GiB",u," "); i=1; while (b>=1024 && i<4) {b/=1024; i++}
  printf (i==1 ? "%d %s" : "%.1f %s"), b, u[i] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b+0==0) print "—"; else printf "%.2f×", a/b }'; }

# time LABEL CMD... -> sets WALL and RSS (KiB), "-" when the command failed
time_cmd() {
  local label=$1; shift
  local out; out=$("$TIMEIT" "$R" "$@")
  log "   $label: $out"
  WALL=$(field median_wall_s "$out"); RSS=$(field max_rss_kib "$out")
  # A failing command must not be reported as a fast one.
  if [ "$(field failed "$out")" != 0 ]; then log "   $label: FAILED"; WALL=-; RSS=-; fi
}

ROWS=(); FLOOR_ROWS=(); QUERY_ROWS=()
for c in "${CORPORA[@]}"; do
  D="$C/$c"; [ -d "$D" ] || { log "skip $c: no $D"; continue; }
  q=$(qsym "$c")
  R=${RUNS:-5}; case $c in linux-*) R=${RUNS_LARGE:-1};; esac
  log "== $c (runs=$R, threads=$THREADS)"
  mkdir -p "$S/$c/ctags" "$S/$c/cscope"

  # parse floor
  if [ -x "$PARSE_FLOOR" ]; then
    time_cmd parse_floor "$PARSE_FLOOR" --threads "$THREADS" "$D"; PF_WALL=$WALL; PF_RSS=$RSS
    info=$("$PARSE_FLOOR" --threads "$THREADS" "$D"); log "   parse_floor: $info"
    FLOOR_ROWS+=("| $c | $(field files "$info") | $(awk -v b="$(field bytes "$info")" 'BEGIN{printf "%.1f", b/1e6}') | $(field c "$info")/$(field cpp "$info") | $PF_WALL | $(field parse_s "$info") | $(field mb_per_s "$info") | $(field files_with_parse_errors "$info") |")
  else
    log "   parse_floor: not built ($PARSE_FLOOR; cargo build --release -p batho-bench)"; PF_WALL=-; PF_RSS=-
  fi

  # universal-ctags, as in the shared anchor-tools.sh
  time_cmd ctags ctags -R -f "$S/$c/ctags/tags" "$D"; CT_WALL=$WALL; CT_RSS=$RSS
  CT_SIZE=$(size_of "$S/$c/ctags/tags")

  # cscope: build the cross-reference (inverted index, no update check)
  time_cmd cscope sh -c "cd '$S/$c/cscope' && exec cscope -Rbqu -s '$D'"; CS_WALL=$WALL; CS_RSS=$RSS
  CS_SIZE=$(size_of "$S/$c/cscope")

  # batho
  if [ -x "$BATHO" ]; then
    # shellcheck disable=SC2086
    time_cmd batho "$BATHO" $BATHO_ARGS "$D"; BT_WALL=$WALL; BT_RSS=$RSS
    BT_SIZE=$(size_of "$D/.batho")
    if [ -x "$OPEN_LOOKUP" ] && [ "$BT_WALL" != - ]; then
      time_cmd open_lookup "$OPEN_LOOKUP" "$D" --name "$q"; OL_WALL=$WALL
      ol=$("$OPEN_LOOKUP" "$D" --name "$q" || true); log "   open_lookup: $ol"
      time_cmd "cscope -L -3" sh -c "cd '$S/$c/cscope' && exec cscope -d -L -3 '$q'"; CQ_WALL=$WALL
      CQ_N=$(cd "$S/$c/cscope" && cscope -d -L -3 "$q" | wc -l)
      QUERY_ROWS+=("| $c | $q | $OL_WALL | $(field open_us "$ol") | $(field lookup_us "$ol") | $(field callers "$ol") | $CQ_WALL | $CQ_N | $(ratio "$OL_WALL" "$CQ_WALL") |")
    fi
  else
    log "   batho: not built ($BATHO)"; BT_WALL="not built"; BT_RSS=-; BT_SIZE=-
  fi

  row() { # tool wall rss size
    local rss=$3; [ "$rss" = - ] || rss=$(human $((rss * 1024)))
    ROWS+=("| $c | $1 | $2 | $rss | $(human "$4") | $(ratio "$2" "$PF_WALL") | $(ratio "$2" "$CT_WALL") |")
  }
  row "batho build --full" "$BT_WALL" "$BT_RSS" "$BT_SIZE"
  row "parse floor (${THREADS} thr)" "$PF_WALL" "$PF_RSS" -
  row "ctags -R" "$CT_WALL" "$CT_RSS" "$CT_SIZE"
  row "cscope -Rbqu" "$CS_WALL" "$CS_RSS" "$CS_SIZE"
done

{
  echo
  echo "Build: median wall (s) of the whole process, peak RSS (GNU time), artifact size; ratios are wall/wall within this run."
  echo
  echo "| corpus | tool | wall s | peak RSS | artifact | × parse floor | × ctags |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
  if [ ${#FLOOR_ROWS[@]} -gt 0 ]; then
    echo
    echo "Parse floor detail (last run): files, MB, C/C++ files, process wall median, parse-phase s, MB/s, files with any ERROR node."
    echo
    echo "| corpus | files | MB | C/C++ | wall s | parse s | MB/s | files w/ errors |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${FLOOR_ROWS[@]}"
  fi
  if [ ${#QUERY_ROWS[@]} -gt 0 ]; then
    echo
    echo "First question from a fresh process: callers of one symbol. Process wall medians (s); open/lookup in µs inside open_lookup."
    echo
    echo "| corpus | symbol | open_lookup s | open µs | lookup µs | callers | cscope -d -L -3 s | cscope lines | × cscope |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${QUERY_ROWS[@]}"
  fi
  echo
  echo "_$(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), runs=${RUNS:-5} (linux ${RUNS_LARGE:-1})_"
} | tee "$S/results.md"
