#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Jobs Slurm no longer knows (issue #19.3), on a real cluster: a job whose
# epilog could not tear it down (lanes.toml broken at its end, no last good
# copy) leaves its class, minor claim, nft element, burst bound and state file.
# `lanesctl gc` asks slurmctld: with slurmctld stopped it keeps the job and says
# why; once slurmctld says the job ended, gc removes everything, restores
# gso_max_size and drains the parked pool. A slurmd restart does the same for
# another node, in the background.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
export LANES_CLUSTER_CPUS=4
E2E_MODE=offpeak e2e_start_cluster
state_root=$E2E_STATE_ROOT
cgroup_root=$E2E_CGROUP_ROOT
lanesctl=$E2E_LANESCTL
conf=$CLUSTER_CONF_DIR/lanes.toml

clean() { [[ -z $(e2e_node_state "$1") ]]; }
has_state() { [[ -f $state_root/$1/job_$2 ]]; }
gc() { cluster_run_node train1 "$lanesctl" gc --config "$conf" --node train1 2>&1; }

gso1=$(e2e_gso_max_size train1)
gso2=$(e2e_gso_max_size train2)
e2e_check "gso_max_size readable on train1 and train2 ($gso1, $gso2)" test -n "$gso1" -a -n "$gso2"

# Two training jobs on train1 (one will end normally and park its class) and
# one on train2.
a=$(cluster_sbatch -J train-a -w train1 -p training -o /dev/null --wrap 'sleep 300')
b=$(cluster_sbatch -J train-b -w train1 -p training -o /dev/null --wrap 'sleep 300')
c=$(cluster_sbatch -J train-c -w train2 -p training -o /dev/null --wrap 'sleep 300')
for id in "$a" "$b" "$c"; do cluster_wait_job "$id" RUNNING 30 >/dev/null; done
e2e_check "jobs $a and $b shaped on train1" e2e_wait_until 30 bash -c "[[ -f $state_root/train1/job_$a && -f $state_root/train1/job_$b ]]"
e2e_check "job $c shaped on train2" e2e_wait_until 30 has_state train2 "$c"
gso_with_jobs=$(e2e_gso_max_size train1)
e2e_check "the burst bound lowered gso_max_size on train1 ($gso1 -> $gso_with_jobs)" test "$gso_with_jobs" -lt "$gso1"

# Job a ends normally: its class is parked for the next job (b still runs).
cluster_run_ctl scancel "$a"
e2e_check "job $a's epilog parked its class" \
    e2e_wait_until 60 bash -c "! [[ -f $state_root/train1/job_$a ]] && [[ -n \$(ls $state_root/train1/parked 2>/dev/null) ]]"

# lanes.toml broken with no last good copy at the end of b and c: their
# epilogs cannot tear them down (the epilog still succeeds: no drain).
e2e_break_config
cluster_run_ctl scancel "$b" "$c"
for id in "$b" "$c"; do cluster_wait_job "$id" 'CANCELLED|COMPLETED|FAILED' 60 >/dev/null; done
epilog_gave_up() { grep -q "JobId=$2: no usable lanes.toml; its shaping (if any) is left for lanesctl gc" "$(cluster_log "$1")"; }
e2e_check "job $b's epilog could not tear it down" e2e_wait_until 60 epilog_gave_up train1 "$b"
e2e_check "job $c's epilog could not tear it down" e2e_wait_until 60 epilog_gave_up train2 "$c"
e2e_restore_config
e2e_check "job $b's state, class and element are left on train1 (the issue's case)" has_state train1 "$b"
e2e_check "job $c's state is left on train2" has_state train2 "$c"
left=$(e2e_node_state train1)
e2e_pass "(figure) left on train1: $(tr '\n' ' ' <<<"$left")"

# slurmctld down: gc keeps the job and says why.
cluster_stop_slurmctld
t0=$(date +%s.%N)
out=$(gc)
e2e_pass "(figure, not asserted) gc with slurmctld down took $(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $t0 }") s"
e2e_check "with slurmctld down gc keeps job $b and says why ($out)" \
    grep -qE "^kept job $b \(training\): no process on this node and slurmctld cannot be asked" <<<"$out"
e2e_check "with slurmctld down job $b's state stays" has_state train1 "$b"
cluster_start_slurmctld

# slurmctld up again and sure the job ended: gc removes all of it.
t0=$(date +%s.%N)
out=$(gc)
e2e_pass "(figure, not asserted) gc asking slurmctld and removing the job took $(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $t0 }") s"
e2e_check "gc removes job $b once slurmctld says it ended ($out)" \
    grep -qE "^removed job $b \(training\): slurmctld (says it ended \((CANCELLED|COMPLETED)\)|no longer knows it)" <<<"$out"
e2e_check "nothing of job $b left on train1: class, element, claim, state, parked pool ($(e2e_node_state train1))" clean train1
e2e_check "gso_max_size restored on train1 ($(e2e_gso_max_size train1), was $gso1)" test "$(e2e_gso_max_size train1)" = "$gso1"

# slurmd restart on train2: its start asks slurmctld in the background.
cluster_restart_slurmd train2
e2e_check "slurmd's start on train2 reclaimed job $c ($(e2e_node_state train2))" e2e_wait_until 60 clean train2
e2e_check "slurmd logged why job $c went" \
    grep -q "JobId=$c: removed leftover state at slurmd start (slurmctld says it ended)" "$(cluster_log train2)"
e2e_check "gso_max_size restored on train2 ($(e2e_gso_max_size train2), was $gso2)" test "$(e2e_gso_max_size train2)" = "$gso2"

# A live job is never touched: gc keeps it (slurmctld says it runs).
d=$(cluster_sbatch -J train-d -w train1 -p training -o /dev/null --wrap 'sleep 300')
cluster_wait_job "$d" RUNNING 30 >/dev/null
e2e_check "job $d shaped on train1" e2e_wait_until 30 has_state train1 "$d"
out=$(gc)
e2e_check "gc keeps running job $d ($out)" grep -qE "^kept job $d " <<<"$out"
e2e_check "job $d still shaped" has_state train1 "$d"
cluster_run_ctl scancel "$d"
e2e_check "job $d's epilog removed it" e2e_wait_until 60 clean train1
e2e_finish
