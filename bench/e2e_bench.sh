# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# bench/e2e_bench.sh: what the job_submit benchmarks on the real test cluster
# share (bench/job_submit_compare.sh, signals_submit_bench.sh,
# default_account_bench.sh). Source it first: strict mode, UTC, LANES_SRCDIR
# and LANES_BUILDDIR (default: this tree and its build/), tests/e2e/e2e.sh,
# and a root check (exit 77 when not root, as the tests do).
set -uo pipefail
export TZ=UTC
export LANES_SRCDIR=${LANES_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
export LANES_BUILDDIR=${LANES_BUILDDIR:-$LANES_SRCDIR/build}
# shellcheck source=tests/e2e/e2e.sh
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
# slurmctld's job_submit/lanes runs the policy in this build's worker (make
# check sets the same; without it the installed path is looked for).
export LANES_POLICY_WORKER=${LANES_POLICY_WORKER:-$LANES_BUILDDIR/policy_worker/lanes-policy-worker}
