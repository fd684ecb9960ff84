#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/deadline.sh, the time limit every test runs under: a test that hangs
# ends in ERROR (99) with a line naming it, its EXIT trap runs (that is how the
# cluster and network tests clean up), one that ignores SIGTERM is killed, a
# test past the run's deadline is not started, and every other exit status
# (pass, fail, skip) passes through unchanged.
set -uo pipefail
src=${LANES_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
deadline=$src/tests/deadline.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; failed=1; }
run() {  # ENV... -- SCRIPT: deadline.sh on SCRIPT; sets out and rc
    local envs=()
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    out=$(env -u LANES_TESTS_DEADLINE "${envs[@]}" bash "$deadline" bash "$@" 2>&1)
    rc=$?
}
printf 'trap "echo cleaned >%s/cleaned" EXIT\nsleep 30\n' "$work" >"$work/hangs.sh"
run LANES_TEST_TIMEOUT=1 -- "$work/hangs.sh"
((rc == 99)) && ok "a hanging test ends in ERROR (99)" || bad "a hanging test exited $rc"
[[ $out == *"$work/hangs.sh killed after "*" s: it ran into LANES_TEST_TIMEOUT=1 s"* ]] &&
    ok "and the line names it and the limit: ${out##*$'\n'}" || bad "no line naming the hung test: $out"
[[ $(cat "$work/cleaned" 2>/dev/null) == cleaned ]] && ok "its EXIT trap ran" || bad "its EXIT trap did not run"

printf 'trap "" TERM\nsleep 30\n' >"$work/stubborn.sh"
run LANES_TEST_TIMEOUT=1 LANES_TEST_GRACE=1 -- "$work/stubborn.sh"
((rc == 99)) && [[ $out == *"killed after"* ]] && ok "a test that ignores SIGTERM is killed (99)" ||
    bad "a test that ignores SIGTERM: exit $rc, $out"

printf 'exit %s\n' 0 >"$work/pass.sh"; printf 'exit %s\n' 1 >"$work/fail.sh"; printf 'exit %s\n' 77 >"$work/skip.sh"
for want in pass:0 fail:1 skip:77; do
    run LANES_TEST_TIMEOUT=30 -- "$work/${want%:*}.sh"
    ((rc == ${want#*:})) && ok "${want%:*}: exit ${want#*:} passes through" || bad "${want%:*}: exit $rc"
done

run LANES_TESTS_DEADLINE=$(($(date +%s) - 5)) -- "$work/pass.sh"
((rc == 99)) && [[ $out == *"$work/pass.sh not started: the run's deadline (LANES_TESTS_DEADLINE) passed"* ]] &&
    ok "a test after the run's deadline is not started: $out" || bad "after the deadline: exit $rc, $out"
# A few seconds ahead: the deadline is whole seconds, and one second ahead
# has passed by the time deadline.sh reads the clock when a second boundary
# falls between (seen on a busy machine: "not started").
run LANES_TESTS_DEADLINE=$(($(date +%s) + 4)) LANES_TEST_TIMEOUT=600 -- "$work/hangs.sh"
((rc == 99)) && [[ $out == *"it ran into the run's deadline"* ]] &&
    ok "a test still running at the run's deadline is stopped there" || bad "at the deadline: exit $rc, $out"

for bad_value in LANES_TEST_TIMEOUT=soon LANES_TESTS_DEADLINE=-1 LANES_TEST_GRACE=0; do
    run "$bad_value" -- "$work/pass.sh"
    ((rc == 99)) && [[ $out == *"${bad_value%%=*}=${bad_value#*=} is not"* ]] &&
        ok "$bad_value is refused: $out" || bad "$bad_value: exit $rc, $out"
done
exit "$failed"
