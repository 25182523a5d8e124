#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-report.sh — the demo's report page as a user sees it, in headless
# Chromium (`make test-report`, run by CI; Debian's chromium, installed by
# scripts/ensure-deps.sh report). Environment: BUILD (the library and the
# demo already built there).
#
#   1. the demo (build/examples/merge_island) runs under the preloaded
#      library with its JSON report, every allocation's site and the folded
#      stacks; sizeclass-report html renders its page;
#   2. Chromium loads a copy of the page with a measuring script added (the
#      page itself is left as it is): the page's height; every piece of
#      drawn text, HTML and SVG, must overlap no other and lie inside the
#      1280 px wide window, which must not scroll sideways; a click on a
#      flame-graph frame must zoom it to the full width, and a click on the
#      top row zoom out again; its --dump-dom carries the results;
#   3. Chromium takes the page's screenshot at 1280 px wide and its full
#      height, and dumps its DOM: the PNG (decoded with zlib) must not be
#      blank — many colours, ink on a good share of it, the class colours
#      of the page's palette — and the DOM must have every section.
# Ends with "test-report: N passed, N failed"; exits 1 on any failure. The
# screenshot stays in $BUILD/test-report/report.png (docs/report.png is a
# copy of it).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
: "${BUILD:?BUILD must name the build directory}"
out=$BUILD/test-report
rm -rf "$out"
mkdir -p "$out"
out=$(realpath "$out")
py() { python3 tests/report/report_util.py "$@"; }

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "test-report: ok: $*"; }
fail() { failed=$((failed + 1)); echo "test-report: FAILED: $*"; }
check() { # check WHAT COMMAND... — passes when COMMAND succeeds
  local what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}
finish() {
  echo "test-report: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

chromium=$(command -v chromium || true)
if [ -z "$chromium" ]; then
  fail "chromium is installed (scripts/ensure-deps.sh report)"
  finish
fi
# A fresh profile each run; nothing reaches the network.
browse() { # browse WIDTHxHEIGHT URL ARGS...
  local size=$1 url=$2
  shift 2
  rm -rf "$out/profile"
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-extensions --hide-scrollbars --user-data-dir="$out/profile" \
    --window-size="$size" --virtual-time-budget=3000 "$@" "$url" 2>>"$out/chromium.log"
}

# ---- 1. the demo's report and its page -----------------------------------------
LD_PRELOAD=$(realpath "$BUILD/libsizeclass.so") SIZECLASS_STATS="$out/demo.json" \
  SIZECLASS_SITES=1 SIZECLASS_SITES_FORMAT=folded "$BUILD/examples/merge_island" \
  > "$out/demo.out" 2> "$out/demo.err"
check "the demo runs and writes its JSON report and folded stacks" \
  test -s "$out/demo.json" -a -s "$out/demo.json.folded"
t0=$(date +%s%N)
scripts/sizeclass-report html "$out/demo.json" -o "$out/report.html" 2> "$out/html.err"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "sizeclass-report html renders the demo's page ($ms ms): $(head -c 200 "$out/html.err")" \
  [ $rc -eq 0 ]
[ -s "$out/report.html" ] || finish

# ---- 2. layout, measured in the browser ------------------------------------------
py measure-copy "$out/report.html" "$out/measure.html"
browse 1280,900 "file://$out/measure.html" --dump-dom > "$out/measure.dom"
check "Chromium ran the measuring copy ($(wc -c < "$out/measure.dom") bytes of DOM)" \
  grep -q 'id="layout-check"' "$out/measure.dom"
py layout "$out/measure.dom" > "$out/layout.txt"
layout_rc=$?
sed 's/^/  /' "$out/layout.txt"
check "no text overlaps other text, nothing is outside 1280 px, zoom works" [ $layout_rc -eq 0 ]
height=$(sed -n 's/^height \([0-9]*\)$/\1/p' "$out/layout.txt")
[ -n "$height" ] || height=4000

# ---- 3. the screenshot and the DOM --------------------------------------------------
browse "1280,$height" "file://$out/report.html" --screenshot="$out/report.png" > /dev/null
check "Chromium took the screenshot" test -s "$out/report.png"
if [ -s "$out/report.png" ]; then
  py png "$out/report.png" --palette > "$out/png.txt" 2>&1
  rc=$?
  check "the screenshot is a picture, not a blank page: $(cat "$out/png.txt")" [ $rc -eq 0 ]
fi
browse 1280,900 "file://$out/report.html" --dump-dom > "$out/report.dom"
py dom "$out/report.dom" > "$out/dom.txt"
rc=$?
sed 's/^/  /' "$out/dom.txt"
check "every section is in the DOM Chromium built" [ $rc -eq 0 ]
finish
