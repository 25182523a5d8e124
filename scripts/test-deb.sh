#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-deb.sh — the Debian packages, end to end (`make test-deb`, run by CI;
# root, on a Debian machine). Environment: BUILD, VERSION, SOMAJOR (the
# packages are already in $BUILD/deb, made by `make deb`).
#
#   1. lintian reports no error (warnings and infos are printed);
#   2. apt-get installs both packages from their files;
#   3. a program that knows nothing of the library, run through the installed
#      `sizeclass-run --stats`, gets libsizeclass's malloc and its report;
#      `--stats=FILE.json` writes a JSON report python3 parses, which the
#      installed sizeclass-report renders and compares; `--html` makes a page;
#   4. examples/hello builds against the installed files through pkg-config
#      and through CMake (find_package, both targets) and finds its malloc
#      is ours; ldconfig knows the soname; the man pages are installed;
#   5. apt-get remove takes both away with every file; installed again,
#      apt-get purge does the same.
# Ends with "test-deb: N passed, N failed"; exits 1 on any failure. The
# packages are purged on the way out whatever happened.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
: "${BUILD:?}" "${VERSION:?}" "${SOMAJOR:?}"
export DEBIAN_FRONTEND=noninteractive
lib_pkg=libsizeclass$SOMAJOR
dev_pkg=libsizeclass-dev
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
debs=("$(realpath "$BUILD/deb/${lib_pkg}_${VERSION}_${arch}.deb")"
  "$(realpath "$BUILD/deb/${dev_pkg}_${VERSION}_${arch}.deb")")

if [ "$(id -u)" != 0 ]; then
  echo "test-deb: needs root (it installs and purges packages with apt-get)" >&2
  exit 1
fi

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "test-deb: ok: $*"; }
fail() { failed=$((failed + 1)); echo "test-deb: FAILED: $*"; }
check() { # check WHAT COMMAND... — passes when COMMAND succeeds
  local what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}

tmp=$(mktemp -d /tmp/sc-deb-XXXXXX)
purge() { apt-get purge -y -qq "$dev_pkg" "$lib_pkg" >/dev/null 2>&1; }
trap 'purge; rm -rf "$tmp"' EXIT

# ---- 1. lintian ----------------------------------------------------------
for deb in "${debs[@]}"; do
  [ -f "$deb" ] || { echo "test-deb: $deb is missing (make deb)" >&2; exit 1; }
done
lintian --display-info --pedantic "${debs[@]}" > "$tmp/lintian.log" 2>&1
grep -E '^[EWIPX]: ' "$tmp/lintian.log" | sed 's/^/  lintian: /'
errors=$(grep -c '^E: ' "$tmp/lintian.log")
warnings=$(grep -c '^W: ' "$tmp/lintian.log")
echo "test-deb: lintian: $errors errors, $warnings warnings"
check "lintian reports no error" [ "$errors" -eq 0 ]

# ---- 2. install -----------------------------------------------------------
if dpkg-query -W "$lib_pkg" "$dev_pkg" >/dev/null 2>&1; then
  echo "test-deb: note: $lib_pkg or $dev_pkg was installed already; it is replaced, then purged"
fi
if ! apt-get install -y -qq "${debs[@]}" > "$tmp/apt.log" 2>&1; then
  cat "$tmp/apt.log"
  fail "apt-get install of both packages"
  echo "test-deb: $passed passed, $failed failed"
  exit 1
fi
ok "apt-get install of both packages"
status() { dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null; }
check "$lib_pkg $VERSION installed" [ "$(status "$lib_pkg")" = "install ok installed $VERSION" ]
check "$dev_pkg $VERSION installed" [ "$(status $dev_pkg)" = "install ok installed $VERSION" ]
dpkg -L "$lib_pkg" "$dev_pkg" | sort -u > "$tmp/files"
check "ldconfig knows libsizeclass.so.$SOMAJOR" \
  sh -c "ldconfig -p | grep -q 'libsizeclass.so.$SOMAJOR .*=> .*/$multiarch/libsizeclass.so.$SOMAJOR\$'"

# ---- 3. a plain program through the installed wrapper -----------------------
cat > "$tmp/plain.c" <<'EOF'
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  void *blocks[1000];
  for (int round = 0; round < 10; round++) {
    for (int i = 0; i < 1000; i++) blocks[i] = malloc(20);
    for (int i = 0; i < 1000; i++) free(blocks[i]);
  }
  void *p = malloc(40);
  printf("usable %zu\n", malloc_usable_size(p));
  free(p);
  return 0;
}
EOF
cc -O1 -o "$tmp/plain" "$tmp/plain.c"
out=$("$tmp/plain")
check "without the wrapper the program is on glibc (usable 40, got '$out')" [ "$out" = "usable 40" ]
check "sizeclass-run is on PATH ($(command -v sizeclass-run))" [ "$(command -v sizeclass-run)" = /usr/bin/sizeclass-run ]
/usr/bin/sizeclass-run --stats "$tmp/plain" > "$tmp/run.out" 2> "$tmp/run.err"
rc=$?
check "sizeclass-run --stats exits 0 (got $rc)" [ $rc -eq 0 ]
check "through sizeclass-run malloc is libsizeclass's (usable 64, got '$(cat "$tmp/run.out")')" \
  [ "$(cat "$tmp/run.out")" = "usable 64" ]
check "the report is on stderr" grep -q '^== libsizeclass statistics (exit) ==$' "$tmp/run.err"
# 10 000 allocations of 20 bytes land in the 32 B class, 1000 of them fresh.
row=$(grep -E '^ +32 B ' "$tmp/run.err" | head -n 1)
read -r _ _ live peak allocs frees _ <<<"$row"
check "32 B class: live 0, peak 1000, 10000 allocs and frees (row: $row)" \
  [ "$live/$peak/$allocs/$frees" = "0/1000/10000/10000" ]
/usr/bin/sizeclass-run --stats="$tmp/report.%p.json" "$tmp/plain" > /dev/null 2>&1
json=$(find "$tmp" -maxdepth 1 -name 'report.*.json' | head -n 1)
check "--stats=FILE.json writes one JSON report per process" [ -n "$json" ]
check "the JSON report parses and counts the 32 B allocations" python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
cls = [c for c in doc["classes"] if c["size"] == 32][0]
sys.exit(0 if cls["allocs"] == 10000 else 1)' "${json:-/nonexistent}"
# shellcheck disable=SC2016 # the inner shell expands it
check "sizeclass-report is on PATH and runs Debian's python3" \
  sh -c '[ "$(command -v sizeclass-report)" = /usr/bin/sizeclass-report ] &&
         [ "$(head -n 1 /usr/bin/sizeclass-report)" = "#!/usr/bin/python3" ]'
check "sizeclass-report html renders that report" \
  sh -c "sizeclass-report html '${json:-/nonexistent}' -o '$tmp/report.html' &&
         grep -q '<section id=\"classes\">' '$tmp/report.html'"
check "sizeclass-report diff passes a budget the same report meets" \
  sh -c "sizeclass-report diff '${json:-/nonexistent}' '${json:-/nonexistent}' \
         --fail-if 'peak_bytes>+10%' > /dev/null"
/usr/bin/sizeclass-run --html "$tmp/run.html" "$tmp/plain" > /dev/null 2>&1
check "sizeclass-run --html writes the page" grep -q '<section id="timeline">' "$tmp/run.html"

# ---- 4. building against the installed files ----------------------------------
check "pkg-config --modversion sizeclass is $VERSION" \
  [ "$(pkg-config --modversion sizeclass 2>/dev/null)" = "$VERSION" ]
cp examples/hello/hello.c examples/hello/CMakeLists.txt "$tmp/"
# Only the installed headers: no -I into the source tree.
# shellcheck disable=SC2046 # pkg-config's flags are words to split
if cc -o "$tmp/hello" "$tmp/hello.c" $(pkg-config --cflags --libs sizeclass) 2> "$tmp/cc.err"; then
  check "pkg-config build: malloc is ours" "$tmp/hello"
else
  cat "$tmp/cc.err"
  fail "pkg-config build"
fi
if cmake -S "$tmp" -B "$tmp/cmake" > "$tmp/cmake.log" 2>&1 && cmake --build "$tmp/cmake" >> "$tmp/cmake.log" 2>&1; then
  check "CMake find_package: sizeclass::sizeclass, malloc is ours" "$tmp/cmake/hello"
  check "CMake find_package: sizeclass::static, malloc is ours" "$tmp/cmake/hello_static"
  check "CMake found the package in /usr/lib/$multiarch/cmake/sizeclass" \
    grep -q "^sizeclass_DIR:PATH=/usr/lib/$multiarch/cmake/sizeclass$" "$tmp/cmake/CMakeCache.txt"
else
  cat "$tmp/cmake.log"
  fail "CMake configure and build of examples/hello"
fi
# Man pages: in the packages' file lists; on disk and clean unless dpkg is
# told to leave /usr/share/man out (minimal container images).
for page in man7/sizeclass.7.gz man1/sizeclass-run.1.gz man1/sizeclass-report.1.gz \
  man3/sc_malloc.3.gz man3/sc_free.3.gz; do
  f=/usr/share/man/$page
  if ! grep -qx "$f" "$tmp/files"; then
    fail "$f is in a package"
  elif grep -rqs '^path-exclude=/usr/share/man' /etc/dpkg/dpkg.cfg.d/; then
    ok "$f is in a package (not on disk: dpkg excludes /usr/share/man here)"
  else
    check "$f is installed and renders without warnings" \
      sh -c "[ -z \"\$(zcat '$f' | groff -man -t -ww -z 2>&1)\" ]"
  fi
done

# ---- 5. remove; install again and purge ------------------------------------------
gone() { # every file of the packages is gone, and ldconfig forgot the soname
  local left
  left=$(while read -r f; do
    if [ -f "$f" ] || [ -L "$f" ]; then echo "$f"; fi
  done < "$tmp/files")
  check "$1: no file of the packages is left${left:+: $left}" [ -z "$left" ]
  check "$1: ldconfig forgot libsizeclass.so.$SOMAJOR" sh -c "! ldconfig -p | grep -q libsizeclass"
  check "$1: dpkg knows neither package any more" \
    sh -c "! dpkg-query -W -f='\${db:Status-Abbrev}\n' $lib_pkg $dev_pkg 2>/dev/null | grep -q '^[a-z]'"
}
apt-get remove -y -qq "$dev_pkg" "$lib_pkg" > "$tmp/remove.log" 2>&1
check "apt-get remove of both packages" [ $? -eq 0 ]
gone remove
apt-get install -y -qq "${debs[@]}" > "$tmp/apt.log" 2>&1
check "apt-get install again" [ "$(status "$lib_pkg")" = "install ok installed $VERSION" ]
apt-get purge -y -qq "$dev_pkg" "$lib_pkg" > "$tmp/purge.log" 2>&1
check "apt-get purge of both packages" [ $? -eq 0 ]
gone purge

echo "test-deb: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
