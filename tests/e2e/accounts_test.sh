#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Account rules on a cluster with accounting (#11.10): MariaDB + slurmdbd
# (tests/cluster/cluster.sh, LANES_CLUSTER_ACCOUNTING=1) and
# AccountingStorageEnforce=associations. A job without -A is judged by the
# account Slurm will charge, the user's default account: allowed_accounts and
# exempt_accounts work through it; a user whose default account is not allowed
# is refused with Lanes' message; -A of an account the user has no association
# with is refused by Slurm; a user without any association is refused by Lanes
# (fail closed), naming the job and the rule.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
command -v mariadbd >/dev/null && command -v slurmdbd >/dev/null || {
    echo "FAIL: mariadbd or slurmdbd missing (contrib/install-deps.sh installs mariadb-server, slurmdbd)"
    exit 1
}
t0=$(date +%s)

member=$(LANES_CLUSTER_USER=lanesml cluster_test_user) || exit 1
outsider=$(LANES_CLUSTER_USER=lanesother cluster_test_user) || exit 1
stranger=$(LANES_CLUSTER_USER=lanesnoassoc cluster_test_user) || exit 1

# Accounts ml and other; the member's default is ml, the outsider's other.
cluster_hook_accounting() {
    cluster_run_ctl sacctmgr -i add account ml,other cluster=lanes-test >/dev/null &&
        cluster_run_ctl sacctmgr -i add user "$member" account=ml defaultaccount=ml >/dev/null &&
        cluster_run_ctl sacctmgr -i add user "$outsider" account=other defaultaccount=other >/dev/null &&
        cluster_run_ctl sacctmgr -i add user root account=other defaultaccount=other >/dev/null
}
# vip may be requested by account ml; training at peak is deferred unless
# the account is ml.
e2e_pre_start() {
    sed -i -e '/^\[classes.vip\]/a allowed_accounts = ["ml"]' \
        -e '/^\[classes.training\]/a exempt_accounts = ["ml"]' "$1/lanes.toml"
}
export LANES_CLUSTER_ACCOUNTING=1
E2E_MODE=peak e2e_start_cluster
t_up=$(date +%s)

submit_as() {
    local who=$1
    shift
    cluster_run_as "$who" sbatch --parsable -o /dev/null "$@" 2>&1
}
job_id_of() { grep -E '^[0-9]+(;.*)?$' <<<"$1" | tail -1 | cut -d';' -f1; }

# 1. allowed_accounts through the default account: no -A, class vip granted.
out=$(submit_as "$member" --lanes-class=vip -J other --wrap true)
id=$(job_id_of "$out")
e2e_check "member (default account ml) gets --lanes-class=vip without -A ($out)" test -n "$id"
if [[ -n $id ]]; then
    e2e_check "vip job routed to partition inference" test "$(cluster_job_field "$id" Partition)" = inference
    e2e_check "Slurm charged the default account ml" test "$(cluster_job_field "$id" Account)" = ml
fi

# 2. A default account not in allowed_accounts: refused with Lanes' message.
out=$(submit_as "$outsider" --lanes-class=vip -J other --wrap true)
rc=$?
e2e_check "outsider (default account other) refused vip" test "$rc" -ne 0
e2e_check "outsider sees Lanes' reason, naming the account ($out)" \
    grep -q "account 'other' are not in its allowed_users/allowed_accounts" <<<"$out"

# 3. -A of an account the user has no association with: Slurm refuses it.
out=$(submit_as "$outsider" -A ml --lanes-class=vip -J other --wrap true)
rc=$?
e2e_check "outsider's -A ml refused" test "$rc" -ne 0
e2e_check "by Slurm's association check ($out)" grep -qi 'invalid account' <<<"$out"

# 4. exempt_accounts through the default account: the member's training job
#    runs at peak, the outsider's is deferred.
out=$(submit_as "$member" -J train-a -t 10 --wrap true)
id=$(job_id_of "$out")
e2e_check "member's training job accepted ($out)" test -n "$id"
e2e_check "member is not told of a deferral ($out)" bash -c '! grep -q deferred <<<"$1"' _ "$out"
[[ -n $id ]] && e2e_check "member's training job runs now (exempt by default account)" \
    cluster_wait_job "$id" COMPLETED 60
out=$(submit_as "$outsider" -J train-b -t 10 --wrap true)
id=$(job_id_of "$out")
e2e_check "outsider's training job accepted ($out)" test -n "$id"
e2e_check "outsider's training job is deferred ($out)" grep -q 'lanes: .*deferred' <<<"$out"
[[ -n $id ]] && e2e_check "outsider's job waits for BeginTime" test "$(cluster_job_field "$id" Reason)" = BeginTime

# 5. No association at all, no -A: Lanes cannot know the account, fails closed.
out=$(submit_as "$stranger" -J train-c --wrap true)
rc=$?
e2e_check "user without association refused" test "$rc" -ne 0
e2e_check "by Lanes, naming the job and the rule ($out)" \
    grep -q "lanes: job train-c of user $stranger names no account (-A).*decides by account" <<<"$out"

t_end=$(date +%s)
echo "figures: cluster with accounting up in $((t_up - t0)) s, checks $((t_end - t_up)) s"
e2e_finish
