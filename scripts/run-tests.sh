#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-tests.sh BIN... — run each Criterion suite, print one summary line
# ("N passed, N failed") and fail if any suite failed.
set -uo pipefail
: "${SC_BUILD:?SC_BUILD must point at the build directory}"
export SC_BUILD
passed=0 failed=0 failed_suites=()
for bin in "$@"; do
  name=$(basename "$bin")
  out=$("$bin" --jobs="${SC_TEST_JOBS:-2}" 2>&1)
  rc=$?
  echo "$out" | grep -vE '^\[----\] Criterion|^$' | sed "s/^/[$name] /" | tail -n 40
  line=$(echo "$out" | grep -E 'Synthesis: Tested: [0-9]+' | tail -n 1)
  p=$(echo "$line" | sed -nE 's/.*Passing: ([0-9]+).*/\1/p')
  f=$(echo "$line" | sed -nE 's/.*Failing: ([0-9]+).*/\1/p')
  c=$(echo "$line" | sed -nE 's/.*Crashing: ([0-9]+).*/\1/p')
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0}))
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    failed_suites+=("$name")
    [ -z "$line" ] && failed=$((failed + 1))
  fi
  : "${c:=0}"
done
echo
if [ ${#failed_suites[@]} -ne 0 ]; then echo "failing suites: ${failed_suites[*]}"; fi
echo "$passed passed, $failed failed"
[ ${#failed_suites[@]} -eq 0 ]
