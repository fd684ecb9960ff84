#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The README's test command: install dependencies, build, and run every test
# (unit, privileged network and real-cluster). Ends with "N passed, N failed".
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${LANES_BUILD_DIR:-$src/build}
t_start=$(date +%s)
# The tests' deadline, in minutes after this start (see below): checked first.
minutes=${LANES_CHECK_MINUTES:-80}
[[ $minutes =~ ^[1-9][0-9]*$ ]] ||
    { echo "lanes: LANES_CHECK_MINUTES=$minutes is not a number of minutes"; echo "0 passed, 1 failed"; exit 1; }
phase_t0=$t_start
phase() {  # NAME: how long the step since the last call took, for the log
    local now
    now=$(date +%s)
    printf 'lanes: %s took %d s\n' "$1" $((now - phase_t0))
    phase_t0=$now
}
bash "$src/contrib/install-deps.sh" || { echo "0 passed, 1 failed"; exit 1; }
phase "installing dependencies"
# ccache (install-deps installs it) serves what an earlier run of any clone
# compiled: paths are hashed relative to the source tree and the working
# directory is not hashed, so a clone elsewhere hits too. The package, root
# and sanitizer builds of the tests use it as well.
if [[ -d /usr/lib/ccache ]]; then
    export PATH=/usr/lib/ccache:$PATH CCACHE_BASEDIR=$src CCACHE_NOHASHDIR=true
fi
(cd "$src" && autoreconf -fi >/dev/null 2>&1) || { echo "lanes: autoreconf failed"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p "$build"
cd "$build"
# Compile time is most of a run with a cold cache (this tree, the sanitizer
# tree, two Debian roots, four packages), so this tree builds what it ships at
# -O2 without debug info (-g costs a quarter of the compile time and nothing
# here reads it; CXXFLAGS in the environment still win), and the unit tests'
# own code at -O0 (a test file compiles in a third of its time at -O2 -g; the
# code they test is the -O2 objects the first make built).
if [[ -z ${CXXFLAGS+set} && -z ${CFLAGS+set} ]]; then
    "$src/configure" -q CXXFLAGS="-O2 -g0" CFLAGS="-O2 -g0" || { echo "0 passed, 1 failed"; exit 1; }
    unit_flags=(CXXFLAGS="-O0 -g0")
else
    "$src/configure" -q || { echo "0 passed, 1 failed"; exit 1; }
    unit_flags=()
fi
make -j"$(nproc)" >make.log 2>&1 || { tail -50 make.log; echo "0 passed, 1 failed"; exit 1; }
make -j"$(nproc)" tests/unit/lanes_unit "${unit_flags[@]}" >>make.log 2>&1 || { tail -50 make.log; echo "0 passed, 1 failed"; exit 1; }
make -j"$(nproc)" check TESTS= >>make.log 2>&1 || { tail -50 make.log; echo "0 passed, 1 failed"; exit 1; }
phase "configure and build"
# The tests run LANES_CHECK_JOBS at a time (default 2; 1 runs them one by one)
# under automake's parallel harness. They are isolated from each other: every
# cluster/network test makes its own network namespaces with a per-run prefix
# (addresses and ports live inside them), its own run dir (mktemp), cgroups
# and state dirs tagged with its PID, and each Debian root its own mount and
# PID namespaces; nothing touches the host's nft ruleset or fixed host ports.
# The longest tests start first so that the two slots stay busy: the Debian
# roots (tests/slurm_versions, tests/vm), the package builds, the sanitizer
# and fuzz builds, the closed-loop signal tests (about 3 min each, which ran
# last and left one slot idle at the end); then the rest in Makefile.am's order.
jobs=${LANES_CHECK_JOBS:-2}
# Every test runs under tests/deadline.sh: LANES_TEST_TIMEOUT (default 30 min)
# for one test, and no test past LANES_CHECK_MINUTES (default 80) after this
# script started, so that a hang costs its own test, named, and the run still
# ends with its counts inside CI's 90 minutes.
export LANES_TESTS_DEADLINE=$((t_start + minutes * 60))
# (Test names have no spaces; anything else make might print is dropped.)
mapfile -t all_tests < <(make -s -f Makefile -f - lanes-print-tests <<<$'lanes-print-tests:\n\t@printf "%s\\n" $(TESTS)' | grep -v " ")
slow_first=(tests/slurm_versions/ tests/vm/ tests/pkg/deb_ tests/pkg/install_test.sh tests/pkg/rpm_test.sh
    tests/build/sanitizers_test.sh tests/fuzz/ tests/signals/control_test.sh tests/e2e/signals_test.sh
    tests/e2e/faults_test.sh tests/e2e/hostile_policy_test.sh)
ordered=()
for pattern in "${slow_first[@]}"; do
    for t in "${all_tests[@]}"; do [[ $t == "$pattern"* ]] && ordered+=("$t"); done
done
for t in "${all_tests[@]}"; do
    [[ " ${ordered[*]} " == *" $t "* ]] || ordered+=("$t")
done
# (--line-buffered: each result shows as it comes, also in a log read live.)
make -j"$jobs" check TESTS="${ordered[*]}" 2>&1 | tee check.log | grep --line-buffered -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):|^# '
rc=${PIPESTATUS[0]}
phase "tests ($jobs at a time)"
# Each test's wall time: its .log is created when it starts (birth time), its
# .trs written when it ends. "?" where the file system keeps no birth time.
echo "lanes: test wall times, longest first (s; tests ran $jobs at a time):"
for t in "${ordered[@]}"; do
    b=${t%.sh}
    [[ -f $b.trs && -f $b.log ]] || continue
    born=$(stat -c %W "$b.log" 2>/dev/null) ended=$(stat -c %Y "$b.trs" 2>/dev/null)
    if [[ $born =~ ^[1-9][0-9]*$ && $ended =~ ^[0-9]+$ ]]; then
        printf '%6d  %s\n' $((ended - born)) "$t"
    else
        printf '%6s  %s\n' '?' "$t"
    fi
done | sort -rn
echo "lanes: the whole run took $(($(date +%s) - t_start)) s"
count() { sed -n "s/^# $1: *\([0-9][0-9]*\)$/\1/p" check.log | tail -1; }
pass=$(count PASS); fail=$(count FAIL); err=$(count ERROR); skip=$(count SKIP); xpass=$(count XPASS)
pass=${pass:-0}; fail=$(( ${fail:-0} + ${err:-0} + ${xpass:-0} ))
if ((rc != 0 && fail == 0)); then fail=1; fi
if ((fail)); then
  for log in $(grep -lE '^:test-result: (FAIL|ERROR)' $(find . -name '*.trs') 2>/dev/null); do
    # The checks that failed first (a cluster test ends with its daemons'
    # logs, which would push them out of the tail), then the tail.
    echo "==== ${log%.trs}.log: failed checks"
    grep -E '^(FAIL|not ok)' "${log%.trs}.log" | head -20
    echo "==== ${log%.trs}.log (last 60 lines)"; tail -60 "${log%.trs}.log"
  done
fi
if [[ ${skip:-0} -gt 0 && $(id -u) -eq 0 ]]; then
  echo "lanes: ${skip} test(s) skipped while running as root; that is a failure"
  fail=$((fail + skip))
fi
echo "${pass} passed, ${fail} failed"
((fail == 0))
