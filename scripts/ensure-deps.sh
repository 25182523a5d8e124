#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ensure-deps.sh WHAT — install the Debian packages WHAT needs, only when
# missing. WHAT: test | bench | plot | report | fuzz | real | tidy | lint |
# format | clang | deb. Runs apt-get as root
# (CI and the dev machines are root); elsewhere prints what to install.
set -euo pipefail

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
want() { for p in "$@"; do have_pkg "$p" || need+=("$p"); done; }

case "${1:-test}" in
  test)
    pkg-config --exists criterion 2>/dev/null || need+=(libcriterion-dev)
    # sqlite3, freeciv-server, redis-*: the real programs of the bench smoke test; cmake: the
    # CMake package; groff-base, mandoc: the man pages; git: the README test copies the tree;
    # tmux, util-linux (setpriv): sizeclass-top in a terminal, another user's process (test_live)
    want pkg-config g++ valgrind python3 gzip coreutils sqlite3 freeciv-server redis-server \
      redis-tools cmake groff-base mandoc git tmux util-linux
    ;;
  bench)
    want libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 sqlite3 python3 valgrind cppcheck \
      g++ binutils freeciv-server redis-server redis-tools
    ;;
  plot) want python3-matplotlib ;; # bench.sh's chart (bench/report.py), optional
  report) want chromium fonts-dejavu-core python3 ;; # make test-report: the page in a browser
  fuzz) want clang libclang-rt-14-dev ;;
  real) want libpython3.11-testsuite libglib2.0-tests ;;
  tidy) want clang-tidy ;;
  lint) want cppcheck pyflakes3 shellcheck ;; # make lint (mk/lint.mk)
  format) want clang-format ;;                  # make format, make check-format
  clang) want clang ;; # make test-clang
  deb) want dpkg-dev binutils lintian cmake pkg-config ;; # make deb, make test-deb
  *) echo "ensure-deps.sh: unknown set '$1'" >&2; exit 2 ;;
esac

[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "ensure-deps.sh: please install: ${need[*]}" >&2
  exit 1
fi
echo "ensure-deps.sh: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq "${need[@]}" >/dev/null 2>&1; then
  apt-get update -qq >/dev/null 2>&1
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
