#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/slurm_versions/in_root.sh: runs INSIDE a Debian root made by
# tests/roots/make_root.sh (see slurm_versions.sh, which enters it). Builds
# Lanes from /lanes/src against that root's Slurm, runs the unit tests and the
# real-cluster suite with the root's slurmctld/slurmd/munged, and prints the
# failing tests' logs. Exit 0 only when every test passed (a skip fails too).
#
#   in_root.sh MAJOR.MINOR     # the Slurm release the root must have, e.g. 24.11
set -uo pipefail
want=${1:?usage: in_root.sh MAJOR.MINOR}
src=/lanes/src
build=/lanes/build
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export CCACHE_DIR=/lanes/ccache LANG=C.UTF-8
# The real-cluster suite: the same scripts the host runs.
tests=(
    tests/unit/lanes_unit
    tests/cluster/smoke_test.sh
    tests/e2e/job_submit_test.sh
    tests/e2e/spank_test.sh
    tests/e2e/faults_test.sh
    tests/e2e/lua_and_lanes_test.sh
)
# What a job owner may change needs slurmctld's job record layout, measured per
# release (glue/job_record_layout.inc): run it where the root's Slurm is in
# that table. Unstable's Slurm moves past it; there job_modify refuses what
# needs the record (a unit test covers that), and job_submit_test's owner
# time-limit change still passes.
[[ $want == 24.11 ]] && tests+=(tests/e2e/owner_update_test.sh)

say() { printf 'in_root: %s\n' "$*"; }
t0=$(date +%s)
since() { echo "$(($(date +%s) - t0)) s"; }

have=$(slurmd -V 2>/dev/null | awk '{ print $2 }')
say "$(. /etc/os-release && echo "$PRETTY_NAME"), Slurm $have, $(g++ --version | head -1)"
if [[ ${have%.*} != "$want" ]]; then
    say "FAIL: this root has Slurm ${have:-none}, the test is for $want (the suite's Slurm moved on?)"
    exit 1
fi

mkdir -p "$build" "$CCACHE_DIR"
cd "$src" || exit 1
if ! autoreconf -fi >"$build/autoreconf.log" 2>&1; then
    tail -20 "$build/autoreconf.log"
    say "FAIL: autoreconf"
    exit 1
fi
cd "$build" || exit 1
# -O1 and no debug info: compile time is most of this test (nobody debugs
# these objects; -g costs a quarter of the compile time, and -O1 takes two
# thirds of -O2's on the heavy files). What this test adds is the behaviour
# against this Slurm; this release's compiler at -O2 is the package's build
# (tests/pkg/deb_*_test.sh, which also runs a shaped job with the packaged
# plugins).
if ! "$src/configure" -q CXX="ccache g++" CC="ccache gcc" CXXFLAGS="-O1 -g0" CFLAGS="-O1 -g0" >configure.out 2>&1; then
    cat configure.out
    say "FAIL: configure against Slurm $have"
    exit 1
fi
grep -i warning configure.out
say "configured in $(since)"
# What the tests load, in parallel: both plugins, lanesctl and the unit tests
# (every file that includes a Slurm header is in these). Benchmarks and the
# other test helpers are left out to keep the run short; LANES_FULL_BUILD=1
# builds everything. The tests then run under make check-TESTS (below).
targets=(job_submit/job_submit_lanes.la spank/spank_lanes.la lanesctl/lanesctl policy_worker/lanes-policy-worker)
# A share dir bound in (SLURM_VERSIONS_SHARE_DIR): the VM test's node binaries too.
[[ -d /lanes/share && -n ${LANES_SHARE_TREE_HASH:-} ]] && targets+=(agent/lanes-agent)
[[ ${LANES_FULL_BUILD:-0} == 1 ]] && targets=(all)
# Then the unit tests at -O0: their 50 gtest files are about half the build,
# and compile in two fifths of the time at -O0 (the host runs them at -O2 and
# under the sanitizers). Objects the first make built keep their flags.
if ! make -j"$(nproc)" "${targets[@]}" >make.log 2>&1 ||
    ! make -j"$(nproc)" tests/unit/lanes_unit CXXFLAGS="-O0 -g0" >>make.log 2>&1; then
    grep -E -B2 -A6 'error:' make.log | head -80
    say "FAIL: build against Slurm $have ($(since))"
    exit 1
fi
say "built in $(since) ($(grep -c 'warning:' make.log) compiler warnings)"
if [[ -d /lanes/share && -n ${LANES_SHARE_TREE_HASH:-} ]]; then
    if cp spank/.libs/spank_lanes.so job_submit/.libs/job_submit_lanes.so lanesctl/lanesctl agent/lanes-agent \
        /lanes/share/ && dpkg-query -W -f '${Version}\n' libslurm-dev >/lanes/share/slurm-version &&
        echo "$LANES_SHARE_TREE_HASH" >/lanes/share/tree-hash && touch /lanes/share/ready; then
        say "the node's binaries shared for the VM test (tree $LANES_SHARE_TREE_HASH)"
    else
        say "could not share the node's binaries (the VM test builds its own)"
    fi
fi
grep -E 'warning:' make.log | sort -u | head -20

# Two at a time, as the host runs them (each cluster test has its own
# daemons, network namespaces, run dir and tagged cgroups): they spend most
# of their time waiting on daemons and jobs (measured: 3.4 min of CPU in a
# 6 min run one at a time), so a second one costs little CPU and saves wall
# time. LANES_ROOT_CHECK_JOBS=1 runs them one by one.
jobs=${LANES_ROOT_CHECK_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { say "FAIL: LANES_ROOT_CHECK_JOBS=$jobs is not a number"; exit 1; }
make -j"$jobs" check-TESTS TESTS="${tests[*]}" >check.log 2>&1
rc=$?
grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):' check.log
count() { sed -n "s/^# $1: *\([0-9][0-9]*\)$/\1/p" check.log | tail -1; }
pass=$(count PASS) fail=$(count FAIL) err=$(count ERROR) skip=$(count SKIP) total=$(count TOTAL)
pass=${pass:-0} fail=$((${fail:-0} + ${err:-0})) skip=${skip:-0}
while IFS= read -r log; do
    echo "==== ${log%.trs}.log (Slurm $have): failed checks"
    grep -E '^(FAIL|not ok|\[  FAILED  \])' "${log%.trs}.log" | head -40
    echo "==== ${log%.trs}.log (Slurm $have): last 80 lines"
    tail -80 "${log%.trs}.log"
done < <(find . -name '*.trs' -exec grep -lE '^:test-result: (FAIL|ERROR|SKIP)' {} +)
if [[ $rc != 0 || $fail != 0 || $skip != 0 || ${total:-0} != "${#tests[@]}" ]]; then
    [[ $rc != 0 && $fail == 0 && $skip == 0 ]] && tail -30 check.log
    say "FAIL: Slurm $have: $pass passed, $fail failed, $skip skipped of ${total:-0} ($(since))"
    exit 1
fi
say "Slurm $have: $pass passed, 0 failed ($(since))"
times >"$build/times.out"  # in this shell: in a pipe, `times` reports the subshell's
say "CPU time of the run (user, system; children second): $(tr '\n' ' ' <"$build/times.out")"
