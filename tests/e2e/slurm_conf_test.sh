#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# job_submit/lanes checks slurm.conf when slurmctld starts and before each
# reload: without PrologFlags=Alloc (the nodes could not trust the decision),
# or with account rules in lanes.toml while AccountingStorageEnforce lacks
# associations (anyone could name any account with -A), slurmctld does not
# start and says why (a slurmd without PrologFlags=Alloc does not start
# either); a reload that adds account rules is refused. Also the
# messages of #11.14/15 on the live cluster: a percentage --lanes-cap, no
# "0Mbit" hint, no TRES line, one log line per error of a broken reload.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
out_file=$(mktemp)

# 1. No PrologFlags=Alloc: slurmctld refuses to start, naming the setting.
e2e_pre_start() { sed -i '/^PrologFlags=/d' "$1/slurm.conf"; }
if E2E_EXPECT_START_FAILURE=1 E2E_START_OUTPUT=$out_file E2E_MODE=offpeak e2e_start_cluster; then
    e2e_fail "slurmctld started without PrologFlags=Alloc"
    cluster_stop 0
else
    e2e_check "without PrologFlags=Alloc slurmctld says why it stopped" \
        grep -q 'lanes: .*slurm.conf lacks PrologFlags=Alloc' "$out_file"
fi

# 2. Account rules without enforced associations (this cluster has no
#    accounting): refused at start, naming the lanes.toml key.
e2e_pre_start() { sed -i '/^\[classes.inference\]/a allowed_accounts = ["ml"]' "$1/lanes.toml"; }
if E2E_EXPECT_START_FAILURE=1 E2E_START_OUTPUT=$out_file E2E_MODE=offpeak e2e_start_cluster; then
    e2e_fail "slurmctld started with account rules and no AccountingStorageEnforce=associations"
    cluster_stop 0
else
    e2e_check "account rules without enforced associations: slurmctld says why" \
        grep -q 'classes.inference.allowed_accounts decides by account, but .*AccountingStorageEnforce' "$out_file"
fi

# 3. The same cluster with neither problem starts; a reload that adds an
#    account rule is refused and the previous configuration keeps routing.
unset -f e2e_pre_start
E2E_MODE=offpeak e2e_start_cluster
log=$(cluster_log slurmctld)
e2e_reload sed -i '/^\[classes.training\]/a exempt_accounts = ["ml"]' "$CLUSTER_CONF_DIR/lanes.toml"
refused() { grep -q 'reload failed.*classes.training.exempt_accounts decides by account' "$log"; }
e2e_check "a reload adding account rules is refused with the reason" refused
id=$(cluster_sbatch -J infer-after -o /dev/null --hold --wrap true)
e2e_check "jobs are still routed by the previous configuration" \
    test "$(cluster_job_field "$id" Partition)" = inference
cluster_run_ctl scancel "$id"

# 4. A reload with two errors: each is its own log line, with slurmctld's
#    timestamp and the "lanes: " prefix.
good=$(mktemp)
cp "$CLUSTER_CONF_DIR/lanes.toml" "$good"
sed -i '/^exempt_accounts/d' "$good"
write_broken() {
    { cat "$good"; printf '[classes.broken1]\nrank = "high"\n[classes.broken2]\ndscp = "XX99"\n'; } \
        >"$CLUSTER_CONF_DIR/lanes.toml"
}
e2e_reload write_broken
two() { grep -q 'broken2' "$log"; }
e2e_check "both errors of the broken reload are logged" e2e_wait_until 5 two
e2e_check "every line of it has a timestamp and the prefix" \
    bash -c '! grep -E "broken1|broken2" "$1" | grep -vqE "^\[[0-9]{4}-[0-9-]+T[0-9:.]+\] error: lanes: "' _ "$log"

# 5. --lanes-cap on a class whose ceiling is a percentage: a percentage lowers
#    it (refused by srun/sbatch before the fix), a rate is refused saying to use
#    a percentage, and --lanes-cap=0 does not suggest "0Mbit".
write_plain() {
    sed '/^\[classes.plain\]/a rate = "10%"\nceil = "50%"\nuser_may_lower_cap = true' "$good" \
        >"$CLUSTER_CONF_DIR/lanes.toml"
}
e2e_reload write_plain
user=$(cluster_test_user)
out=$(cluster_run_as "$user" sbatch --parsable --hold --lanes-class=plain --lanes-cap=20% -o /dev/null --wrap true 2>&1)
id=$(grep -E '^[0-9]+$' <<<"$out" | tail -1)
e2e_check "--lanes-cap=20% lowers a 50% ceiling ($out)" test -n "$id"
[[ -n $id ]] && cluster_run_ctl scancel "$id"
out=$(cluster_run_as "$user" sbatch --parsable --hold --lanes-class=plain --lanes-cap=60% -o /dev/null --wrap true 2>&1)
e2e_check "--lanes-cap=60% is above the class cap ($out)" grep -q 'is above class .plain. cap of 50%' <<<"$out"
e2e_check "and Slurm's line under it is not about TRES" bash -c '! grep -q "Trackable RESource" <<<"$1"' _ "$out"
out=$(cluster_run_as "$user" sbatch --parsable --hold --lanes-class=plain --lanes-cap=2Gbit -o /dev/null --wrap true 2>&1)
e2e_check "--lanes-cap=2Gbit asks for a percentage ($out)" grep -q 'as a percentage' <<<"$out"
out=$(cluster_run_as "$user" sbatch --parsable --hold --lanes-cap=0 -o /dev/null --wrap true 2>&1)
e2e_check "--lanes-cap=0 says zero, not 0Mbit ($out)" bash -c 'grep -q "is zero" <<<"$1" && ! grep -q 0Mbit <<<"$1"' _ "$out"

# 6. A slurmd whose slurm.conf lacks PrologFlags=Alloc (slurmctld's has it):
#    spank_lanes refuses at slurmd start and slurmd exits, saying why, so no
#    job is ever launched on that node without the trusted decision. The same
#    slurmd with the cluster's slurm.conf registers again.
noalloc=$CLUSTER_CONF_DIR/slurm-noalloc.conf
sed '/^PrologFlags=/d' "$CLUSTER_CONF" >"$noalloc"
conf_saved=$CLUSTER_CONF
cluster__kill_pids 10 "${CLUSTER_SLURMD_PID[train1]}"
CLUSTER_CONF=$noalloc cluster__start_slurmd train1
slurmd_gone() { ! cluster__alive "${CLUSTER_SLURMD_PID[train1]}"; }
e2e_check "slurmd without PrologFlags=Alloc does not keep running" e2e_wait_until 30 slurmd_gone
e2e_check "slurmd's log says spank_lanes refused and why" \
    grep -q 'lanes: slurm.conf lacks PrologFlags=Alloc: spank_lanes needs it .*slurmd not started' \
    "$(cluster_log train1)" "$CLUSTER_LOG_DIR/slurmd-train1.out"
CLUSTER_CONF=$conf_saved
e2e_check "with PrologFlags=Alloc the same node registers again" cluster_restart_slurmd train1
rm -f "$good" "$out_file" "$noalloc"
e2e_finish
