#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rounding.sh — issue 31's rounding experiment (throw-away, never shipped):
# builds round_shim.c twice into $TMPD (mimalloc behind a shim, with and
# without rounding every request <= 1024 B up to a power of two), then
#   - peak RSS (getrusage of the program, a native run: memory is not
#     disturbed by CPU load) of cppcheck on a $RSS_LINES-line generated file
#     (default 25000, the issue's size) and of cxx_game --frames 2000, under
#     glibc, mimalloc, tcmalloc, libsizeclass and the two shims, $RUNS runs
#     each (default 3; the median is printed);
#   - the same allocators under callgrind's cache simulation
#     (cxx_cachesim.sh), unless CACHESIM=0.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
TMPD=${TMPD:-/tmp/sc-rounding}
RSS_LINES=${RSS_LINES:-25000}
RUNS=${RUNS:-3}
mkdir -p "$TMPD"
MI=$(ldconfig -p | awk '$1 == "libmimalloc.so.2" { print $NF; exit }')
TC=$(ldconfig -p | awk '$1 == "libtcmalloc_minimal.so.4" { print $NF; exit }')
for r in 0 1; do
  cc -O2 -shared -fPIC -DROUND=$r -o "$TMPD/libround$r.so" bench/experiments/round_shim.c "$MI" ||
    exit 1
done
python3 -c "import sys; sys.path.insert(0, 'bench/real'); import cxx_source; \
sys.stdout.write(cxx_source.source($RSS_LINES)[0])" >"$TMPD/gen.cpp"
ALLOCS=("glibc=" "mimalloc=$MI" "tcmalloc=$TC" "libsizeclass=$(realpath "$BUILD/libsizeclass.so")"
  "mi-shim=$TMPD/libround0.so" "mi-pow2=$TMPD/libround1.so")
for w in "cppcheck-$RSS_LINES|cppcheck -q $TMPD/gen.cpp" "cxx-game-2000|$BUILD/bench/cxx_game --frames 2000"; do
  for a in "${ALLOCS[@]}"; do
    # shellcheck disable=SC2086 # the command line is split into its words
    python3 - "${a#*=}" "$RUNS" "${w%%|*} ${a%%=*}" ${w#*|} <<'PY'
import os, statistics, subprocess, sys
env = dict(os.environ)
env.pop("LD_PRELOAD", None)
if sys.argv[1]:
    env["LD_PRELOAD"] = sys.argv[1]
peaks = []
for _ in range(int(sys.argv[2])):
    p = subprocess.Popen(sys.argv[4:], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0)
    peaks.append(ru.ru_maxrss if os.waitstatus_to_exitcode(st) == 0 else -1)
print("%s peak_rss_kb=%d (runs: %s)" % (sys.argv[3], statistics.median(peaks),
                                         " ".join(map(str, peaks))))
PY
  done
done
[ "${CACHESIM:-1}" = 0 ] || bench/experiments/cxx_cachesim.sh "${ALLOCS[@]}"
