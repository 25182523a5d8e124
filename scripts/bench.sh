#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench.sh — run the benchmark suite (bench/) under glibc, jemalloc, mimalloc,
# tcmalloc, libsizeclass and libsizeclass with SIZECLASS_STATS=/dev/null (its
# exact-statistics tier), interleaved (A B C D E F, A B C D E F, ...) so that
# drift of the machine hits every allocator alike, and write
# bench/results/latest.{md,png,tsv}. `make bench` calls it after building.
# Each run records the benchmark's metric, and from getrusage of the
# benchmark process (real programs: the measured child's, from wait4) its
# peak RSS, minor page faults and system time.
#
#   scripts/bench.sh [--quick] [--runs N] [--only REGEX] [--sections LIST] [--no-variants]
#                    [--smoke] [--list]
#
# --sections picks what runs, a comma list of main (every allocator), stats,
# harden and footprint (default all four; --no-variants = main). Environment:
# QUICK=1, RUNS=N, ONLY=REGEX, SECTIONS=LIST (same as the flags), BUILD (build
# directory, default build), OUT (results directory, default bench/results),
# SC_SO and SC_NOHARDEN_SO (the libraries to test, default
# $BUILD/libsizeclass.so and $BUILD/noharden/libsizeclass.so), BENCH_LIB_REV
# (what to call that library in the results; default the git commit).
# --smoke runs each selected benchmark once, tiny, under libsizeclass only,
# and fails if any of them fails: the test suite uses it so the benchmarks
# cannot rot. --list prints the benchmark names. Variants (not in --smoke): libsizeclass with
# SIZECLASS_STATS=/dev/null vs without (statistics overhead, issue 3) and the
# default hardened build vs SC_HARDEN=0 ($BUILD/noharden, built by
# `make bench-noharden`), on micro and frame-burst.
# The footprint section (issue 7) measures peak and settled RSS of
# frame-burst (with --settle-ms) and bench/footprint.c (level load / burst /
# settle) under every allocator plus glibc and libsizeclass with
# malloc_trim(0) after each burst (--trim 1); FP_RUNS runs each (default 3,
# quick 1; these runs are long and RSS varies little). --smoke runs only main
# unless --sections says otherwise (footprint: under libsizeclass with and
# without --trim 1).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

QUICK=${QUICK:-}
RUNS=${RUNS:-}
ONLY=${ONLY:-}
SECTIONS=${SECTIONS:-}
FP_RUNS=${FP_RUNS:-}
BUILD=${BUILD:-build}
OUT=${OUT:-bench/results}
SMOKE=0
LIST=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --runs) RUNS=$2; shift ;;
    --only) ONLY=$2; shift ;;
    --sections) SECTIONS=$2; shift ;;
    --no-variants) SECTIONS=main ;;
    --smoke) SMOKE=1 ;;
    --list) LIST=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ "$QUICK" = 0 ] && QUICK=
RUNS=${RUNS:-5}
if [ -z "$SECTIONS" ]; then
  if [ "$SMOKE" = 1 ]; then SECTIONS=main; else SECTIONS=main,stats,harden,footprint; fi
fi
if [ -z "$FP_RUNS" ]; then
  if [ -n "$QUICK" ]; then FP_RUNS=1; else FP_RUNS=3; fi
fi
if [ "$SMOKE" = 0 ] && [ "$RUNS" -lt 5 ]; then
  echo "bench.sh: at least 5 runs per allocator (RUNS=$RUNS)" >&2
  exit 2
fi
PY=/usr/bin/python3 # Debian's python3: the one python3-matplotlib serves

# ---- the suite ------------------------------------------------------------
# name | program (build/bench/<p>, or "real") | fixed args | full | quick | smoke
# The last three are the size arguments of each mode. Full runs take about
# 0.2-0.6 s per run here (frame-latency ~5 s: paced frames; freeciv,
# redis and gxx ~3-4 s, cppcheck ~7 s); quick about a tenth of that (gxx:
# 3 of its 12 functions, ~1.5 s: cc1plus parses the same headers).
suite() {
  cat <<'EOF'
frame-burst|frame_burst||--frames 200000|--frames 20000|--frames 300
micro-lifo-1|micro|--order lifo --ws 1|--pairs 4000000|--pairs 400000|--pairs 2000
micro-lifo-100|micro|--order lifo --ws 100|--pairs 4000000|--pairs 400000|--pairs 2000
micro-lifo-10k|micro|--order lifo --ws 10000|--pairs 2000000|--pairs 200000|--ws 1000 --pairs 1000
micro-lifo-100k|micro|--order lifo --ws 100000|--pairs 1000000|--pairs 100000|--ws 1000 --pairs 1000
micro-rand-100|micro|--order rand --ws 100|--pairs 4000000|--pairs 400000|--pairs 2000
micro-rand-10k|micro|--order rand --ws 10000|--pairs 2000000|--pairs 200000|--ws 1000 --pairs 1000
micro-rand-100k|micro|--order rand --ws 100000|--pairs 1000000|--pairs 100000|--ws 1000 --pairs 1000
micro-mixed-1k|micro_mixed|--order rand --ws 1000|--pairs 1000000|--pairs 100000|--pairs 1000
xthread-prodcons|cross_thread|--mode prodcons|--ops 4000000|--ops 400000|--ops 5000
prodcons|prodcons|--size 64|--batches 1000|--batches 100|--batches 4 --batch 100 --queue 4
xthread-larson|cross_thread|--mode larson --threads 2 --slots 10000|--ops 3000000|--ops 300000|--ops 5000
mixed|mixed||--steps 1500000|--steps 150000|--steps 3000
thread-churn|thread_churn|--threads 4 --allocs 400|--batches 1500|--batches 150|--batches 5
lifo-batch|lifo_batch||--blocks 2000000|--blocks 200000|--blocks 2000
random-replace|random_replace|--live 20000|--steps 5000000|--steps 500000|--steps 5000 --live 1000
cxx-game|cxx_game||--frames 2000|--frames 200|--frames 30
frame-latency|frame_latency|--frame-us 4000 --pairs 300|--load 1500000 --frames 1000|--load 300000 --frames 250|--load 20000 --frames 20 --frame-us 1000
thread-rounds|thread_rounds|--threads 2|--rounds 250|--rounds 50|--rounds 3 --objects 200
sizes-2t|sizes_2t|--slots 1000|--ops 1000000|--ops 100000|--ops 2000 --slots 100
sizes-2t-pass|sizes_2t|--slots 1000 --pass 500|--ops 1000000|--ops 100000|--ops 2000 --slots 100
sizes-2t-rounds|sizes_2t_rounds||--rounds 400|--rounds 40|--rounds 2 --steps 200 --min-ws 50 --max-ws 100
thread-spawn|thread_spawn||--threads 50000|--threads 5000|--threads 50
stress-8t|stress_mt|--threads 8 --slots 4096|--ops 250000|--ops 25000|--ops 1000 --slots 256
python|real||300000|30000|2000
python-malloc|real||300000|30000|2000
perl|real||300000|30000|2000
sqlite|real||200000|20000|500
cppcheck|real||25000|5000|500
gxx|real||12|3|1
freeciv|real||60|15|2
redis|real||15000|2000|200
EOF
}

# The footprint section: the same columns; the metric is settled RSS (KiB,
# the program's settled_rss_kb=), the RSS its peak_rss_kb=. Full mode runs
# footprint with its defaults (2 levels, 64 MiB level, 256 MiB burst, 3 s
# settle: 8-12 s a run; a shorter settle would catch jemalloc mid-decay),
# frame-burst a tenth of its main size plus 1.5 s of light frames (its heap
# is a few MiB; 1.5 s is past libsizeclass's default purge delay of 1 s).
# Full: ~(70 + 11) s a round of the 7 allocators.
# shellcheck disable=SC2317 # called through run_section's SUITE argument
footprint_suite() {
  cat <<'EOF'
frame-burst-settle|frame_burst||--frames 20000 --settle-ms 1500|--frames 20000 --settle-ms 1500|--frames 300 --settle-ms 50
level-burst-settle|footprint||--levels 2|--levels 1 --settle-ms 2000 --burst-mb 64 --level-mb 16|--levels 1 --settle-ms 50 --burst-mb 2 --level-mb 1
EOF
}

if [ "$LIST" = 1 ]; then
  suite | cut -d'|' -f1
  exit 0
fi

# Benchmarks the variants run (a regex over names).
VARIANT_STATS='^(micro-lifo-1|micro-rand-10k)$'
VARIANT_HARDEN='^(frame-burst|micro-lifo-1|micro-rand-10k)$'

# ---- allocators -------------------------------------------------------------
# label|LD_PRELOAD path (empty: glibc)|extra environment (VAR=value)|extra arguments
lib_path() { ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n { print $NF; exit }'; }

SC_SO=$(realpath "${SC_SO:-$BUILD/libsizeclass.so}" 2>/dev/null || true)
if [ -z "$SC_SO" ] || [ ! -f "$SC_SO" ]; then
  echo "bench.sh: ${SC_SO:-$BUILD/libsizeclass.so} is missing (run make)" >&2
  exit 1
fi

ALLOCS=()
if [ "$SMOKE" = 1 ]; then
  ALLOCS=("libsizeclass|$SC_SO|")
  FP_ALLOCS=("libsizeclass|$SC_SO||" "libsizeclass+malloc_trim|$SC_SO||--trim 1")
else
  scripts/ensure-deps.sh bench || exit 1
  JE=$(lib_path libjemalloc.so.2)
  MI=$(lib_path libmimalloc.so.2)
  TC=$(lib_path libtcmalloc_minimal.so.4)
  for pair in "jemalloc:$JE" "mimalloc:$MI" "tcmalloc:$TC"; do
    if [ -z "${pair#*:}" ]; then
      echo "bench.sh: ${pair%%:*} not found by ldconfig after ensure-deps" >&2
      exit 1
    fi
  done
  # The default library and its exact-statistics tier (opt-in through
  # SIZECLASS_STATS; the report goes to /dev/null) against the same peers.
  ALLOCS=("glibc||" "jemalloc|$JE|" "mimalloc|$MI|" "tcmalloc|$TC|" "libsizeclass|$SC_SO|"
    "libsizeclass+stats|$SC_SO|SIZECLASS_STATS=/dev/null")
  FP_ALLOCS=("glibc|||" "glibc+malloc_trim|||--trim 1" "jemalloc|$JE||" "mimalloc|$MI||"
    "tcmalloc|$TC||" "libsizeclass|$SC_SO||" "libsizeclass+malloc_trim|$SC_SO||--trim 1")
fi

# ---- running ----------------------------------------------------------------
mode_col() { # which column holds the size arguments
  if [ "$SMOKE" = 1 ]; then echo 6; elif [ -n "$QUICK" ]; then echo 5; else echo 4; fi
}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
RAW="$TMP/raw.tsv"
: >"$RAW"
FAILS=0

# run_one SECTION BENCHLINE ALLOC RUN — one run; appends a row to $RAW.
run_one() {
  local section=$1 line=$2 alloc=$3 run=$4
  local name prog fixed size label preload extra args out rc result
  IFS='|' read -r name prog fixed _ _ _ <<<"$line"
  size=$(cut -d'|' -f"$(mode_col)" <<<"$line")
  IFS='|' read -r label preload extra args <<<"$alloc"
  local envs=()
  [ -n "$extra" ] && envs+=("$extra")
  if [ "$prog" = real ]; then
    # shellcheck disable=SC2086
    out=$(timeout 600 env "${envs[@]}" BENCH_PRELOAD="$preload" "$PY" bench/real/run_real.py \
      "$name" $size 2>"$TMP/err" </dev/null)
  else
    [ -n "$preload" ] && envs+=("LD_PRELOAD=$preload")
    # shellcheck disable=SC2086
    out=$(timeout 600 env "${envs[@]}" "$BUILD/bench/$prog" $fixed $size $args 2>"$TMP/err" </dev/null)
  fi
  rc=$?
  result=$(grep '^RESULT ' <<<"$out" | tail -n 1)
  if [ $rc -ne 0 ] || [ -z "$result" ]; then
    echo "bench.sh: FAILED $name under $label (exit $rc):" >&2
    tail -n 5 "$TMP/err" | sed 's/^/    /' >&2
    fail_row "$section" "$name" "$label" "$run"
    return 1
  fi
  local metric unit rss sum minflt stime more
  metric=$(sed -nE 's/.* metric=([^ ]+).*/\1/p' <<<"$result")
  unit=$(sed -nE 's/.* unit=([^ ]+).*/\1/p' <<<"$result")
  rss=$(sed -nE 's/.* rss_kb=([^ ]+).*/\1/p' <<<"$result")
  sum=$(sed -nE 's/.* checksum=([^ ]+).*/\1/p' <<<"$result")
  minflt=$(sed -nE 's/.* minflt=([0-9]+).*/\1/p' <<<"$result")
  stime=$(sed -nE 's/.* stime_ms=([0-9.]+).*/\1/p' <<<"$result")
  # Benchmark-specific figures (frame-latency's percentiles, redis's
  # requests/s): the last "EXTRA k=v ..." line, kept as is.
  more=$(grep '^EXTRA ' <<<"$out" | tail -n 1 | cut -d' ' -f2-)
  if [ "$section" = footprint ]; then
    # Settled and peak RSS from the program's own line (statm; its peak
    # also folds in getrusage's).
    local fp
    fp=$(grep -E '^[a-z_]+: .*settled_rss_kb=' <<<"$out" | tail -n 1)
    metric=$(sed -nE 's/.* settled_rss_kb=([0-9]+).*/\1/p' <<<"$fp")
    rss=$(sed -nE 's/.* peak_rss_kb=([0-9]+).*/\1/p' <<<"$fp")
    unit=KiB
    if [ -z "$metric" ] || [ -z "$rss" ]; then
      echo "bench.sh: FAILED $name under $label: no settled_rss_kb=/peak_rss_kb= line" >&2
      fail_row "$section" "$name" "$label" "$run"
      return 1
    fi
    [ "$SMOKE" = 1 ] && echo "smoke footprint $name $label: settled $metric KiB, peak $rss KiB"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$section" "$name" "$unit" "$label" \
    "$run" "$metric" "$rss" "$sum" "${minflt:--}" "${stime:--}" "${more:--}" >>"$RAW"
  [ "$SMOKE" = 1 ] && [ "$section" != footprint ] &&
    echo "smoke $name: $metric $unit, peak RSS $rss KiB, minor faults ${minflt:-?}, system ${stime:-?} ms${more:+, $more}"
  return 0
}

# fail_row SECTION NAME LABEL RUN — record a failed run (and count it).
fail_row() {
  printf '%s\t%s\t?\t%s\t%s\tFAIL\t0\t-\t-\t-\t-\n' "$1" "$2" "$3" "$4" >>"$RAW"
  FAILS=$((FAILS + 1))
}

# run_section SECTION NAME_REGEX SUITE NRUNS ALLOC... — every selected
# benchmark of SUITE (a function printing suite lines), NRUNS rounds, each
# round running every allocator once in order.
run_section() {
  local section=$1 regex=$2 suite_fn=$3 nruns=$4
  shift 4
  local allocs=("$@") line name n=0 total i t0 r a
  total=$("$suite_fn" | cut -d'|' -f1 | grep -E -- "$regex" | grep -cE -- "${ONLY:-.}")
  while IFS= read -r line; do
    name=${line%%|*}
    grep -qE -- "$regex" <<<"$name" || continue
    grep -qE -- "${ONLY:-.}" <<<"$name" || continue
    n=$((n + 1))
    t0=$SECONDS
    i=0
    for ((r = 1; r <= nruns; r++)); do
      for a in "${allocs[@]}"; do
        run_one "$section" "$line" "$a" "$r" || true
        i=$((i + 1))
      done
      [ "$SMOKE" = 1 ] && break
    done
    [ "$SMOKE" = 1 ] || echo "[$section $n/$total] $name: $i runs, $((SECONDS - t0)) s" >&2
  done < <("$suite_fn")
}

T_START=$SECONDS
want_section() { [[ ",$SECTIONS," == *",$1,"* ]]; }
if [ "$SMOKE" = 1 ]; then
  want_section main && run_section main '.' suite 1 "${ALLOCS[@]}"
  want_section footprint && run_section footprint '.' footprint_suite 1 "${FP_ALLOCS[@]}"
  [ "$(wc -l <"$RAW")" -gt 0 ] || { echo "bench.sh: no benchmark matches '$ONLY'" >&2; exit 2; }
  [ $FAILS -eq 0 ] || { echo "bench.sh: $FAILS smoke run(s) failed" >&2; exit 1; }
  exit 0
fi

echo "bench.sh: $RUNS runs per allocator (footprint: $FP_RUNS)${QUICK:+, quick mode}; sections $SECTIONS; allocators: glibc jemalloc mimalloc tcmalloc libsizeclass libsizeclass+stats" >&2
want_section main && run_section main '.' suite "$RUNS" "${ALLOCS[@]}"
if want_section stats; then
  run_section stats "$VARIANT_STATS" suite "$RUNS" "libsizeclass|$SC_SO|" \
    "libsizeclass+stats|$SC_SO|SIZECLASS_STATS=/dev/null"
fi
if want_section harden; then
  NOHARDEN=$(realpath "${SC_NOHARDEN_SO:-$BUILD/noharden/libsizeclass.so}" 2>/dev/null || true)
  if [ -n "$NOHARDEN" ] && [ -f "$NOHARDEN" ]; then
    run_section harden "$VARIANT_HARDEN" suite "$RUNS" "SC_HARDEN=0|$NOHARDEN|" "hardened|$SC_SO|"
  else
    echo "bench.sh: $BUILD/noharden/libsizeclass.so missing (make bench-noharden); no hardening comparison" >&2
  fi
fi
want_section footprint && run_section footprint '.' footprint_suite "$FP_RUNS" "${FP_ALLOCS[@]}"

mkdir -p "$OUT"
cp "$RAW" "$OUT/latest.tsv"
MACHINE="$(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -sr)"
PEERS="glibc $(ldd --version 2>/dev/null | head -n1 | awk '{print $NF}'); $(for p in libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4; do printf '%s %s; ' "$p" "$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null)"; done)"
# Which library was measured: BENCH_LIB_REV, else the commit (+ "dirty"
# when the allocator's sources differ from it).
if [ -z "${BENCH_LIB_REV:-}" ]; then
  BENCH_LIB_REV=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  git diff --quiet HEAD -- src shim include 2>/dev/null || BENCH_LIB_REV="$BENCH_LIB_REV + uncommitted changes"
fi
scripts/ensure-deps.sh plot || echo "bench.sh: no python3-matplotlib; the chart is skipped" >&2
"$PY" bench/report.py --raw "$OUT/latest.tsv" --md "$OUT/latest.md" --png "$OUT/latest.png" \
  --runs "$RUNS" --fp-runs "$FP_RUNS" --mode "$([ -n "$QUICK" ] && echo quick || echo full)" \
  --machine "$MACHINE" --peers "${PEERS%; }" --seconds $((SECONDS - T_START)) \
  --rev "$BENCH_LIB_REV"
rc=$?
if [ $FAILS -ne 0 ]; then
  echo "bench.sh: $FAILS run(s) failed (see FAIL in the table)" >&2
  exit 1
fi
exit $rc
