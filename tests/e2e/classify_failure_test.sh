#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# nodes.classify_failure on a real cluster: a job's second step starts on a
# node where its Lanes record is gone. With the default "fail" the step's
# launch is refused and the user sees why; with "warn" the task runs,
# unclassified, and slurmd's log says why (JobId, the reason, "warn").
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
work=$(mktemp -d)
trap 'rm -rf "$work"; e2e_on_exit' EXIT
E2E_MODE=offpeak e2e_start_cluster
chmod 777 "$work"

# run_without_record TAG: a job on train1 whose batch task runs with its
# record in place; the record is moved away for its `srun`, then put back so
# the epilog cleans up. Prints the job id; its output is $work/TAG.out.
run_without_record() {
    local tag=$1 id rec _
    id=$(cluster_sbatch -J "train-$tag" -w train1 -p training -o "$work/$tag.out" --wrap "
        echo batch \$(grep ^0:: /proc/self/cgroup)
        touch $work/$tag.started
        for _ in \$(seq 300); do [ -e $work/$tag.go ] && break; sleep 0.2; done
        srun -n1 sh -c 'echo task ran: \$(grep ^0:: /proc/self/cgroup)'; echo srun rc=\$?
        touch $work/$tag.done
        for _ in \$(seq 300); do [ -e $work/$tag.end ] && break; sleep 0.2; done")
    rec=$E2E_STATE_ROOT/train1/job_$id
    started() { [[ -e $work/$tag.started && -e $rec ]]; }
    e2e_wait_until 60 started || e2e_fail "job $id ($tag): batch task or record missing"
    mv "$rec" "$work/$tag.record"
    touch "$work/$tag.go"
    done_() { [[ -e $work/$tag.done ]]; }
    e2e_wait_until 60 done_ || e2e_fail "job $id ($tag): srun did not return"
    mv "$work/$tag.record" "$rec"
    touch "$work/$tag.end"
    cluster_wait_job "$id" COMPLETED 60 >/dev/null
    printf '%s\n' "$id"
}

# 1. Default "fail": the step is refused, with Lanes' reason on the user's stderr.
id=$(run_without_record fail)
cat "$work/fail.out"
e2e_check "fail: the task did not run" bash -c '! grep -q "task ran" "$1"' _ "$work/fail.out"
e2e_check "fail: srun failed" bash -c '! grep -q "srun rc=0" "$1"' _ "$work/fail.out"
e2e_check "fail: the user sees Lanes' refusal naming the job and the reason" \
    grep -q "lanes: JobId=$id: no Lanes record on this node.*refusing to launch an unclassified task" "$work/fail.out"

# 2. "warn": the same launch runs, unclassified, and slurmd's log says why.
e2e_reload sed -i '/^\[nodes\]/a classify_failure = "warn"' "$CLUSTER_CONF_DIR/lanes.toml"
id=$(run_without_record warn)
cat "$work/warn.out"
# Unmarked: the batch task is in the job's Lanes cgroup (the nft key), the
# step's task is not.
lanes_cg=${E2E_CGROUP_ROOT#/sys/fs/cgroup/unified}/train1/job_$id
e2e_check "warn: the batch task is in the job's Lanes cgroup" grep -q "^batch 0::$lanes_cg\$" "$work/warn.out"
e2e_check "warn: the task ran" grep -q "^task ran: 0::" "$work/warn.out"
e2e_check "warn: unmarked (not in the job's Lanes cgroup)" bash -c '! grep -q "^task ran: 0::$1" "$2"' _ "$lanes_cg" "$work/warn.out"
e2e_check "warn: srun succeeded" grep -q "srun rc=0" "$work/warn.out"
e2e_check "warn: slurmd's log names the job, the reason and warn" \
    grep -q "lanes: JobId=$id: no Lanes record on this node.*the task runs unclassified (nodes.classify_failure = \"warn\")" \
    "$(cluster_log train1)"
e2e_finish
