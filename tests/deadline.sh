#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/deadline.sh COMMAND...: runs one test (automake's LOG_COMPILER) under
# a time limit, so that a test that hangs fails, names itself and frees its
# slot, instead of holding the whole run until CI's own limit kills it with
# no result at all.
#
#   LANES_TEST_TIMEOUT   one test's limit in seconds (default 1800; the
#                        longest test takes about 11 min on a quiet 2-core
#                        machine)
#   LANES_TESTS_DEADLINE an instant (seconds since the epoch) no test may run
#                        past; contrib/check-all.sh sets it so that the run
#                        ends, with its counts, inside CI's time. A test that
#                        would start after it is not started.
#   LANES_TEST_GRACE     seconds between SIGTERM and SIGKILL (default 90: a
#                        cluster test's stop takes up to about a minute)
#
# On expiry timeout(1) sends SIGTERM to the test's process group (the tests'
# EXIT/TERM traps stop their daemons and delete their namespaces), and
# SIGKILL LANES_TEST_GRACE s later to what is left. The test then ends in
# ERROR (exit 99), which the harness counts as failed, with a line in its log
# that says why. A timeout(1) inside a test runs with --foreground, so that
# it stays in the test's process group and this one reaches what it runs.
set -uo pipefail
(($#)) || { echo "usage: deadline.sh COMMAND..." >&2; exit 99; }
test_name=${!#}
limit=${LANES_TEST_TIMEOUT:-1800}
[[ $limit =~ ^[1-9][0-9]*$ ]] || { echo "deadline.sh: LANES_TEST_TIMEOUT=$limit is not a number of seconds" >&2; exit 99; }
why="LANES_TEST_TIMEOUT=$limit s"
if [[ -n ${LANES_TESTS_DEADLINE:-} ]]; then
    [[ $LANES_TESTS_DEADLINE =~ ^[0-9]+$ ]] ||
        { echo "deadline.sh: LANES_TESTS_DEADLINE=$LANES_TESTS_DEADLINE is not an epoch time" >&2; exit 99; }
    left=$((LANES_TESTS_DEADLINE - $(date +%s)))
    if ((left <= 0)); then
        echo "lanes: $test_name not started: the run's deadline (LANES_TESTS_DEADLINE) passed $((-left)) s ago"
        exit 99
    fi
    if ((left < limit)); then
        limit=$left
        why="the run's deadline, LANES_TESTS_DEADLINE, $left s after this test started"
    fi
fi
grace=${LANES_TEST_GRACE:-90}
[[ $grace =~ ^[1-9][0-9]*$ ]] || { echo "deadline.sh: LANES_TEST_GRACE=$grace is not a number of seconds" >&2; exit 99; }
started=$(date +%s)
# stdin: nothing (a test that reads it would wait on the caller's terminal or CI).
timeout --kill-after="$grace" "$limit" "$@" </dev/null
rc=$?
# 124: the limit passed (SIGTERM); 137: the test outlived SIGTERM by the
# grace. Either only once the limit has passed: a test's own timeout(1) may
# end it with 124 earlier, and that is the test's own failure.
if (((rc == 124 || rc == 137) && $(date +%s) - started >= limit)); then
    echo "lanes: $test_name killed after $(($(date +%s) - started)) s: it ran into $why"
    exit 99
fi
exit "$rc"
