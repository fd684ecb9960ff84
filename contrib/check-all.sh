#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The README's test command: install dependencies, build, and run every test
# (unit, privileged network and real-cluster). Ends with "N passed, N failed".
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${LANES_BUILD_DIR:-$src/build}
bash "$src/contrib/install-deps.sh" || { echo "0 passed, 1 failed"; exit 1; }
(cd "$src" && autoreconf -fi >/dev/null 2>&1) || { echo "lanes: autoreconf failed"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p "$build"
cd "$build"
"$src/configure" -q || { echo "0 passed, 1 failed"; exit 1; }
make -j"$(nproc)" >make.log 2>&1 || { tail -50 make.log; echo "0 passed, 1 failed"; exit 1; }
# Unit tests build in parallel; the tests themselves run serially because the
# cluster tests each start their own daemons.
make -j"$(nproc)" check TESTS= >>make.log 2>&1 || { tail -50 make.log; echo "0 passed, 1 failed"; exit 1; }
make check -j1 2>&1 | tee check.log | grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):|^# '
rc=${PIPESTATUS[0]}
count() { sed -n "s/^# $1: *\([0-9][0-9]*\)$/\1/p" check.log | tail -1; }
pass=$(count PASS); fail=$(count FAIL); err=$(count ERROR); skip=$(count SKIP); xpass=$(count XPASS)
pass=${pass:-0}; fail=$(( ${fail:-0} + ${err:-0} + ${xpass:-0} ))
if ((rc != 0 && fail == 0)); then fail=1; fi
if ((fail)); then
  for log in $(grep -lE '^:test-result: (FAIL|ERROR)' $(find . -name '*.trs') 2>/dev/null); do
    echo "==== ${log%.trs}.log"; tail -60 "${log%.trs}.log"
  done
fi
if [[ ${skip:-0} -gt 0 && $(id -u) -eq 0 ]]; then
  echo "lanes: ${skip} test(s) skipped while running as root; that is a failure"
  fail=$((fail + skip))
fi
echo "${pass} passed, ${fail} failed"
((fail == 0))
