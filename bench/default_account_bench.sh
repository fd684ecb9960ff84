#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What resolving the default account costs job_submit/lanes (#11.10): on a real
# cluster with MariaDB + slurmdbd and USERS associations in slurmctld's cache,
# the same user submits JOBS held jobs with -A (no lookup) and JOBS without
# (default account looked up under the assoc_mgr read lock). Prints slurmctld's
# server-side time per submit (sdiag: REQUEST_SUBMIT_BATCH_JOB ave_time) for
# both and the difference. Figures, not a test.
#
#   bash bench/default_account_bench.sh [JOBS=200] [USERS=2000]
# Needs root and a built tree (LANES_BUILDDIR, default ./build).
# shellcheck source=bench/e2e_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_bench.sh"
jobs=${1:-200}
users=${2:-2000}

member=$(LANES_CLUSTER_USER=lanesml cluster_test_user) || exit 1
cluster_hook_accounting() {
    cluster_run_ctl sacctmgr -i add account ml cluster=lanes-test >/dev/null || return 1
    # Users before the member in the cache's list: a lookup scans them.
    local names
    names=$(seq -f 'benchu%g' 1 "$users" | paste -sd,)
    cluster_run_ctl sacctmgr -i add user "$names" account=ml defaultaccount=ml >/dev/null || return 1
    cluster_run_ctl sacctmgr -i add user "$member" account=ml defaultaccount=ml >/dev/null
}
e2e_pre_start() { sed -i '/^\[classes.vip\]/a allowed_accounts = ["ml"]' "$1/lanes.toml"; }
export LANES_CLUSTER_ACCOUNTING=1
E2E_MODE=offpeak e2e_start_cluster

ave_us() { cluster_run_ctl sdiag | sed -n 's/.*REQUEST_SUBMIT_BATCH_JOB .*ave_time:\([0-9]*\).*/\1/p' | head -1; }
phase() {
    cluster_run_ctl sdiag -r >/dev/null
    local i
    for ((i = 0; i < jobs; i++)); do
        cluster_run_as "$member" sbatch -H -J bench -o /dev/null "$@" --wrap true >/dev/null 2>&1 ||
            { echo "submit failed: $*"; return 1; }
    done
    ave_us
}
phase -A ml >/dev/null  # warm-up
with_a=$(phase -A ml) || exit 1
without_a=$(phase) || exit 1
account=$(cluster_run_ctl squeue -h -u "$member" -o %a | sort -u | paste -sd,)
echo "figures: $jobs submits each, $users other users in the association cache; jobs' accounts: $account"
echo "figures: slurmctld ave_time per submit: with -A ${with_a} us, without -A (default account looked up) ${without_a} us, difference $((without_a - with_a)) us"
cluster_run_ctl scancel -u "$member"
