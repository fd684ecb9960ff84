#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The generative policy fuzzer (tests/fuzz/policy_fuzz.cpp) through both
# engines a Config can choose: the in-process sandbox (a Config built in
# memory), then lanes-policy-worker processes (lanes.toml text with [policy]
# worker, as slurmctld and lanesctl read it; --worker, which also writes the
# attacks only the process bound holds). LANES_POLICY_FUZZ_SECONDS (default
# 120) is the total, split between the two; arguments are passed to both runs
# (make fuzz-policy passes --keep-going). Needs LANES_POLICY_WORKER (make check
# sets it); the worker run fails, saying so, without it.
set -uo pipefail
fuzz="${LANES_BUILDDIR:?run through make check}/tests/fuzz/policy_fuzz"
total=${LANES_POLICY_FUZZ_SECONDS:-120}
in_process=$(awk -v t="$total" 'BEGIN { printf "%d", t / 2 }')
in_worker=$(awk -v t="$total" -v a="$in_process" 'BEGIN { printf "%d", t - a }')
status=0
echo "== in-process sandbox, ${in_process} s"
"$fuzz" "$@" --seconds "$in_process" || status=1
echo "== lanes-policy-worker processes, ${in_worker} s"
"$fuzz" --worker "$@" --seconds "$in_worker" || status=1
exit $status
