#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# job_submit/lanes on a real cluster: routing of each job kind, deferral in a peak
# window, rejection messages reaching the user, explicit class requests, job_modify
# escapes refused, the decision reaching every node's prolog unforged, and reload
# of a broken policy keeping the last good one.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root

# A Prolog that records what each node receives from slurmctld (PrologFlags=Alloc).
e2e_pre_start() {
    cat >"$1/record-prolog.sh" <<'SH'
#!/bin/sh
env | grep '^SPANK_LANES_' | sort >"$CLUSTER_WORK_DIR_FOR_PROLOG/prolog-$SLURM_JOB_ID-$(hostname).env"
exit 0
SH
    sed -i "s|\$CLUSTER_WORK_DIR_FOR_PROLOG|$CLUSTER_WORK_DIR|" "$1/record-prolog.sh"
    chmod 755 "$1/record-prolog.sh"
    printf 'Prolog=%s/record-prolog.sh\n' "$1" >>"$1/slurm.conf"
}
# sched/backfill: Slurm accepts heterogeneous jobs only with it.
e2e_start_cluster "SchedulerType=sched/backfill"
user=$(cluster_test_user)
work=$CLUSTER_WORK_DIR

# sbatch as USER, capturing stderr (where the user's messages appear) and the id.
submit_as() {
    local who=$1
    shift
    local out
    if [[ $who == root ]]; then
        out=$(cd "$work" && cluster_run_ctl sbatch --parsable "$@" 2>&1)
    else
        out=$(cluster_run_as "$who" sbatch --parsable "$@" 2>&1)
    fi
    local rc=$?
    printf '%s\n' "$out"
    return $rc
}
job_id_of() { grep -E '^[0-9]+(;.*)?$' <<<"$1" | tail -1 | cut -d';' -f1; }

# 1. Inference by policy: routed to the inference partition and runs on infer1.
out=$(submit_as "$user" -J infer-llm -o /dev/null --wrap 'sleep 1')
id=$(job_id_of "$out")
e2e_check "inference job accepted ($out)" test -n "$id"
e2e_check "inference job routed to partition inference" \
    test "$(cluster_job_field "$id" Partition)" = inference
e2e_check "inference job completes on infer1" cluster_wait_job "$id" COMPLETED 60
e2e_check "inference job ran on infer1" test "$(cluster_job_field "$id" NodeList)" = infer1

# 1b. Every kind of submission is classified: arrays, heterogeneous jobs, srun
#     without an allocation, salloc.
out=$(submit_as "$user" --array=1-3 -J infer-array -o /dev/null --wrap true)
id=$(job_id_of "$out")
e2e_check "job array accepted ($out)" test -n "$id"
e2e_check "job array routed to inference" test "$(cluster_job_field "${id}_1" Partition 2>/dev/null || cluster_job_field "$id" Partition)" = inference
out=$(submit_as root -J infer-het -o /dev/null --wrap true : -J train-het -o /dev/null --wrap true)
id=$(job_id_of "$out")
e2e_check "heterogeneous job accepted ($out)" test -n "$id"
e2e_check "het component 0 routed to inference" test "$(cluster_job_field "${id}+0" Partition)" = inference
e2e_check "het component 1 routed to training" test "$(cluster_job_field "${id}+1" Partition)" = training
# srun and salloc wait for their allocation as long as it takes: bounded here.
out=$(cluster_run_as "$user" timeout --foreground -k 10 180 srun -J infer-srun bash -c 'echo "$SLURM_JOB_PARTITION $SLURMD_NODENAME"' 2>&1)
e2e_check "srun without allocation is classified ($out)" grep -q '^inference infer1' <<<"$out"
out=$(cluster_run_as "$user" timeout --foreground -k 10 180 salloc -J infer-salloc srun bash -c 'echo "$SLURM_JOB_PARTITION"' 2>&1)
e2e_check "salloc is classified ($out)" grep -q '^inference' <<<"$out"

# 2. Training at peak: deferred to the window's end, and the user is told.
out=$(submit_as "$user" -J train-resnet -t 30 -o /dev/null --wrap 'sleep 1')
id=$(job_id_of "$out")
e2e_check "training job accepted at peak ($out)" test -n "$id"
e2e_check "user is told the job is deferred" grep -q 'lanes: .*deferred' <<<"$out"
begin=$(cluster_job_field "$id" EligibleTime)
e2e_check "training BeginTime is the window end ($begin ~ $E2E_PEAK_END)" \
    test "${begin:11:5}" = "$E2E_PEAK_END"
e2e_check "training routed to partition training" test "$(cluster_job_field "$id" Partition)" = training
reason=$(cluster_job_field "$id" Reason)
e2e_check "pending reason is BeginTime ($reason)" test "$reason" = BeginTime

# lanesctl fetches the pending job from slurmctld (libslurm) and dry-runs it.
dry=$(cluster_run_ctl "$E2E_LANESCTL" policy test --config "$CLUSTER_CONF_DIR/lanes.toml" --job "$id" 2>&1)
e2e_check "lanesctl policy test --job $id classifies the real job as training" grep -qE '^  class: +training' <<<"$dry"

# 3. Exempt user (root) is not deferred.
id=$(job_id_of "$(submit_as root -J train-root -o /dev/null --wrap 'sleep 1')")
e2e_check "exempt training job runs now" cluster_wait_job "$id" COMPLETED 60

# 4. Policy rejection reaches the user with the policy's words.
out=$(submit_as "$user" -J refuse-me -o /dev/null --wrap true)
rc=$?
e2e_check "policy reject fails sbatch" test "$rc" -ne 0
e2e_check "user sees the policy's reason ($out)" grep -q 'jobs named refuse-me are not allowed here' <<<"$out"

# 5. Explicit class requests: allowed class ok, privileged class refused.
out=$(submit_as "$user" --lanes-class=inference -J other -o /dev/null --wrap 'sleep 1')
id=$(job_id_of "$out")
e2e_check "--lanes-class=inference allowed for everyone" test -n "$id"
e2e_check "explicit inference request routed" test "$(cluster_job_field "$id" Partition)" = inference
out=$(submit_as "$user" --lanes-class=vip -J other -o /dev/null --wrap true)
rc=$?
e2e_check "--lanes-class=vip refused for $user" test "$rc" -ne 0
e2e_check "refusal names the class ($out)" grep -q 'vip' <<<"$out"
out=$(submit_as "$user" --lanes-class='bad class' -J other -o /dev/null --wrap true)
e2e_check "malformed --lanes-class refused at submit ($out)" grep -q -- '--lanes-class' <<<"$out"

# 6. Cap requests: lower is fine, higher refused.
out=$(submit_as root --lanes-cap=10Mbit -J train-capped -o /dev/null --wrap 'sleep 1')
id=$(job_id_of "$out")
e2e_check "--lanes-cap below the class cap accepted ($out)" test -n "$id"
cluster_wait_job "$id" COMPLETED 60 >/dev/null
e2e_check "prolog got the lowered ceil" grep -qx 'SPANK_LANES_CEIL=10000000' "$work/prolog-$id-train1.env" "$work/prolog-$id-train2.env"
out=$(submit_as root --lanes-cap=5Gbit -J train-greedy -o /dev/null --wrap true)
rc=$?
e2e_check "--lanes-cap above the class cap refused ($out)" test "$rc" -ne 0

# 7. Forgery: a user sets every Lanes variable they can reach; the nodes' prologs
#    still receive slurmctld's decision (training, CS1 = 8), not the forged one.
export_list="ALL,SPANK_LANES_CLASS=vip,LANES_CLASS=vip,SPANK_LANES_DSCP=46,LANES_DSCP=46,LANES_RATE=1"
out=$(cluster_run_as "$user" env SPANK_LANES_CLASS=vip LANES_CLASS=vip SPANK_LANES_DSCP=46 \
    _SLURM_SPANK_OPTION_lanes_lanes-class=vip \
    sbatch --parsable --begin=now -N2 -p training -J forge --export="$export_list" -o /dev/null --wrap 'sleep 1' 2>&1)
id=$(job_id_of "$out")
e2e_check "forgery job accepted as a normal training job ($out)" test -n "$id"
scontrol_out=$(cluster_run_ctl scontrol update jobid="$id" StartTime=now 2>&1)
cluster_wait_job "$id" COMPLETED 90 >/dev/null
for node in train1 train2; do
    f=$work/prolog-$id-$node.env
    e2e_check "$node prolog saw class training, not the forged vip" grep -qx 'SPANK_LANES_CLASS=training' "$f"
    e2e_check "$node prolog saw DSCP 8, not the forged 46" grep -qx 'SPANK_LANES_DSCP=8' "$f"
done

# 8. job_modify: users cannot move a job to escape the policy; root can.
id=$(job_id_of "$(submit_as "$user" -J train-later -t 30 -o /dev/null --wrap 'sleep 1')")
out=$(cluster_run_as "$user" scontrol update jobid="$id" Partition=inference 2>&1)
rc=$?
e2e_check "user cannot move a job to another partition ($out)" test "$rc" -ne 0
e2e_check "partition unchanged" test "$(cluster_job_field "$id" Partition)" = training
# Log lines name the job as Slurm's own do: one grep finds its story (#14).
e2e_check "slurmctld logged the refusal as lanes: JobId=$id" \
    grep -qE "lanes: JobId=$id: refused update by uid [0-9]+: the partition decides" "$(cluster_log slurmctld)"
out=$(cluster_run_as "$user" scontrol update jobid="$id" StartTime=now 2>&1)
rc=$?
e2e_check "user cannot pull a deferred job into the peak ($out)" test "$rc" -ne 0
out=$(cluster_run_as "$user" scontrol update jobid="$id" StartTime=now+1 2>&1)
rc=$?
e2e_check "not even to now+1 ($out)" test "$rc" -ne 0
out=$(cluster_run_as "$user" scontrol update jobid="$id" Name=infer-sneaky 2>&1)
rc=$?
e2e_check "user cannot rename the job into another class ($out)" test "$rc" -ne 0
out=$(cluster_run_as "$user" scontrol update jobid="$id" NumNodes=2 2>&1)
rc=$?
e2e_check "user cannot change the node count the policy read ($out)" test "$rc" -ne 0
e2e_check "user may still shorten the time limit" cluster_run_as "$user" scontrol update jobid="$id" TimeLimit=20
e2e_check "admin can move it" cluster_run_ctl scontrol update jobid="$id" Partition=inference
e2e_check "admin's move took effect" test "$(cluster_job_field "$id" Partition)" = inference
cluster_run_ctl scancel "$id"

# 9. Reload: a broken policy keeps the last good one (and is logged once); a fixed
#    one is picked up without restarting slurmctld.
sleep 1.1
printf 'function classify(job)\n  return "inference" +\nend\n' >"$CLUSTER_CONF_DIR/policy.lua"
for n in 1 2 3; do
    id=$(job_id_of "$(submit_as "$user" -J infer-after-break -o /dev/null --wrap true)")
    e2e_check "submit $n after a broken policy still classifies with the last good one" \
        test "$(cluster_job_field "$id" Partition)" = inference
    sleep 1.1
done
errors=$(grep -cE 'reload failed.*policy.lua:[0-9]+: ' "$CLUSTER_LOG_DIR/slurmctld.log")
e2e_check "broken policy logged once with file:line (got $errors)" test "$errors" -eq 1
cat >"$CLUSTER_CONF_DIR/policy.lua" <<'LUA'
function classify(job)
  if job.name:match("^infer") then return "vip" end
  return nil
end
LUA
sleep 2.5  # slurmctld's reload thread looks once a second
id=$(job_id_of "$(submit_as "$user" -J infer-after-fix -o /dev/null --wrap true)")
cluster_wait_job "$id" COMPLETED 60 >/dev/null
e2e_check "fixed policy picked up without a restart" grep -qx 'SPANK_LANES_DSCP=46' "$work/prolog-$id-infer1.env"

e2e_finish
