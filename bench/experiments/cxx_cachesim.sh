#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cxx_cachesim.sh — the C++ workloads under callgrind's cache simulation
# (deterministic: instruction and miss counts do not depend on the load of
# the machine), each allocator preloaded, split by cg_split.py into the
# allocator's calls and the program's own work; plus each workload's peak
# RSS from a native run (getrusage of the program: memory is not disturbed
# by CPU load). Issue 31's analysis (docs/performance.md, "C++: where the
# misses come from").
#
#   bench/experiments/cxx_cachesim.sh [LABEL=SO ...]
#
# Without arguments: glibc, mimalloc, tcmalloc and $BUILD/libsizeclass.so.
# LABEL=SO pairs replace that list (LABEL=  : glibc). Workloads: cxx-game
# (build/bench/cxx_game --frames $FRAMES, default 300) and cppcheck
# (Debian's, on bench/real/cxx_source.py's file of $LINES lines, default
# 5000). Cache geometry fixed (not the host's): I1/D1 32 KiB 8-way, LL 8 MiB
# 16-way, 64 B lines. Output: one row per run on stdout; profiles kept in
# $OUT (default /tmp/cxx-cachesim).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
OUT=${OUT:-/tmp/cxx-cachesim}
FRAMES=${FRAMES:-300}
LINES=${LINES:-5000}
mkdir -p "$OUT"
lib_path() { ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n { print $NF; exit }'; }
if [ $# -eq 0 ]; then
  set -- "glibc=" "mimalloc=$(lib_path libmimalloc.so.2)" \
    "tcmalloc=$(lib_path libtcmalloc_minimal.so.4)" "libsizeclass=$(realpath "$BUILD/libsizeclass.so")"
fi
python3 -c "import sys; sys.path.insert(0, 'bench/real'); import cxx_source; \
sys.stdout.write(cxx_source.source($LINES)[0])" >"$OUT/gen.cpp"
# shellcheck disable=SC2054 # the commas are valgrind's cache geometry
CG=(valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64)

# peak_kb PRELOAD ARGV... — the program's peak RSS (KiB, getrusage via wait4)
peak_kb() {
  local preload=$1
  shift
  python3 - "$preload" "$@" <<'PY'
import os, subprocess, sys
env = dict(os.environ)
env.pop("LD_PRELOAD", None)
if sys.argv[1]:
    env["LD_PRELOAD"] = sys.argv[1]
p = subprocess.Popen(sys.argv[2:], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, st, ru = os.wait4(p.pid, 0)
print(ru.ru_maxrss if os.waitstatus_to_exitcode(st) == 0 else "FAIL")
PY
}

for w in "cxx-game|$BUILD/bench/cxx_game --frames $FRAMES" "cppcheck|cppcheck -q $OUT/gen.cpp"; do
  wl=${w%%|*}
  read -ra argv <<<"${w#*|}"
  for a in "$@"; do
    label=${a%%=*}
    so=${a#*=}
    envs=()
    [ -n "$so" ] && envs=("LD_PRELOAD=$so")
    out="$OUT/cg.$wl.$label"
    env "${envs[@]}" "${CG[@]}" --callgrind-out-file="$out" "${argv[@]}" >/dev/null 2>"$out.err" ||
      { echo "$wl $label FAILED (see $out.err)"; continue; }
    echo "$wl $label peak_rss_kb=$(peak_kb "$so" "${argv[@]}") $(python3 scripts/cg_split.py "$out")"
  done
done
