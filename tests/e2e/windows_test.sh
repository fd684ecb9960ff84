#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Windows users cannot undo (#11 item 9), on a real cluster:
#  A. job_modify: the owner of a training job that Lanes let borrow the inference
#     partition (because it ended before peak) cannot raise its time limit into
#     peak; raising within the room, shortening, and operators stay allowed.
#  B. Peak enforced at start, not only at submit: with the reservations that
#     `lanesctl windows --reservations ... --apply` creates, a borrowing training
#     job still pending when peak starts does not start on the reserved inference
#     node (without them, the same kind of job does), while inference runs there.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root

# Off-peak: the peak window is [now+120m, now+180m). Training borrows inference.
export E2E_MODE=offpeak
e2e_pre_start() {
    sed -i 's/^avoid_windows = \["peak"\]$/avoid_windows = ["peak"]\nborrow_partitions = ["inference"]/' \
        "$1/lanes.toml"
    grep -q '^borrow_partitions = \["inference"\]' "$1/lanes.toml"
}
e2e_start_cluster
user=$(cluster_test_user)
uid=$(id -u "$user")
log=$(cluster_log slurmctld)

submit_as_user() { cluster_run_as "$user" sbatch --parsable "$@" 2>&1; }
job_id_of() { grep -E '^[0-9]+(;.*)?$' <<<"$1" | tail -1 | cut -d';' -f1; }

# ---- A. time limits -----------------------------------------------------------
out=$(submit_as_user -H -J train-b -t 60 -o /dev/null --wrap 'sleep 1')
b=$(job_id_of "$out")
e2e_check "held training job accepted off-peak ($out)" test -n "$b"
e2e_check "it borrows the inference partition" test "$(cluster_job_field "$b" Partition)" = training,inference

out=$(cluster_run_as "$user" scontrol update jobid="$b" TimeLimit=4:00:00 2>&1)
rc=$?
e2e_check "owner cannot raise the limit into peak (rc=$rc: $out)" test "$rc" -ne 0
e2e_check "time limit unchanged" test "$(cluster_job_field "$b" TimeLimit)" = 01:00:00
e2e_check "slurmctld log says why, naming the job and the borrowed partition" \
    grep -qE "lanes: JobId=$b: refused update by uid $uid: (lanes: )?the time limit of this training job cannot be raised to 4h: the job may use partition inference only because it ends before the next avoided window; at most 1h(59|58)m" "$log"
if [[ $out == *lanes:* ]]; then  # Slurm 23.02+ passes job_modify's message on
    e2e_check "the user sees the reason ($out)" grep -q 'cannot be raised to 4h' <<<"$out"
fi
e2e_check "owner may raise it within the room before peak" \
    cluster_run_as "$user" scontrol update jobid="$b" TimeLimit=90
e2e_check "raised to 1:30" test "$(cluster_job_field "$b" TimeLimit)" = 01:30:00
e2e_check "owner may shorten it" cluster_run_as "$user" scontrol update jobid="$b" TimeLimit=30
e2e_check "shortened to 0:30" test "$(cluster_job_field "$b" TimeLimit)" = 00:30:00

out=$(submit_as_user -H -J train-c -t 30 -o /dev/null --wrap 'sleep 1')
c=$(job_id_of "$out")
e2e_check "second held training job accepted ($out)" test -n "$c"
e2e_check "an operator may raise it into peak" cluster_run_ctl scontrol update jobid="$c" TimeLimit=4:00:00
e2e_check "raised to 4:00" test "$(cluster_job_field "$c" TimeLimit)" = 04:00:00

# ---- B. peak enforced at start ------------------------------------------------
# The training nodes are busy (an exempt root job), so the scheduler looks at infer1.
fill=$(cluster_sbatch -J train-fill -p training -N2 --exclusive -o /dev/null --wrap 'sleep 300')
e2e_check "training nodes filled" cluster_wait_job "$fill" RUNNING 60

# Control, no reservation yet: a borrowing job whose limit runs into peak starts on infer1.
e2e_check "owner releases the 4h borrowing job" cluster_run_as "$user" scontrol release "$c"
e2e_check "without reservations it runs on infer1" cluster_wait_job "$c" COMPLETED 60
e2e_check "... on infer1" test "$(cluster_job_field "$c" NodeList)" = infer1

# Peak starts: the window now holds [now-30m, now+60m); the admin's cron job runs
# lanesctl windows --reservations --apply (twice here: it must be idempotent).
conf=$CLUSTER_CONF_DIR/lanes.toml
start=$(e2e_hhmm -30) end=$(e2e_hhmm 60)
sed -i -E "/^\[windows.peak\]/,/^\[/ { s/^start = .*/start = \"$start\"/; s/^end = .*/end = \"$end\"/ }" "$conf"
apply() {
    cluster_run_ctl "$E2E_LANESCTL" windows --config "$conf" --days 1 --reservations \
        --reservation-users root --apply 2>&1
}
out=$(apply)
rc=$?
e2e_check "lanesctl windows --apply creates the reservations (rc=$rc: $out)" \
    grep -qE '^lanes_peak_[0-9]{8}_[0-9]{4} created \(peak\)$' <<<"$out"
out2=$(apply)
rc=$?
e2e_check "a second run leaves them alone (rc=$rc: $out2)" test "$rc" -eq 0
e2e_check "... reporting them as existing" grep -qE '^lanes_peak_[0-9]{8}_[0-9]{4} exists \(peak\)$' <<<"$out2"
e2e_check "... and creating none" test "$(grep -c created <<<"$out2")" -eq 0
resv=$(cluster_run_ctl scontrol show reservation 2>&1)
e2e_check "the current occurrence covers infer1 now ($resv)" grep -q 'Nodes=infer1 ' <<<"$resv"
e2e_check "... with IGNORE_JOBS, MAGNETIC and PART_NODES" \
    grep -qE 'Flags=.*IGNORE_JOBS.*MAGNETIC|Flags=.*MAGNETIC.*IGNORE_JOBS' <<<"$resv"
e2e_check "... in state ACTIVE" grep -q 'State=ACTIVE' <<<"$resv"

# The borrowing job pending since before peak is released now.
e2e_check "owner releases the borrowing job" cluster_run_as "$user" scontrol release "$b"
considered() {
    local r
    r=$(cluster_job_field "$b" Reason) || return 1
    [[ $r != JobHeldUser && $r != None ]]
}
deadline=$((SECONDS + 60))
until considered || ((SECONDS > deadline)); do sleep 0.2; done
reason=$(cluster_job_field "$b" Reason)
e2e_check "the scheduler looked at it and left it pending ($reason)" considered
# An inference job (root may use the reservation) runs on infer1 meanwhile: the
# node is free, only the reservation keeps the training job off it. It names the
# reservation: with Slurm 22.05 MAGNETIC did not admit it on its own (measured:
# still pending after 60 s, "Reserved for maintenance").
name=$(awk '/^ReservationName=/ { n = $1 } /State=ACTIVE/ { sub("ReservationName=", "", n); print n; exit }' <<<"$resv")
inf=$(cluster_sbatch -J infer-peak -t 10 --reservation="$name" -o /dev/null --wrap 'sleep 1')
e2e_check "inference runs on infer1 during peak" cluster_wait_job "$inf" COMPLETED 60
e2e_check "... on infer1" test "$(cluster_job_field "$inf" NodeList)" = infer1
e2e_check "... inside the reservation" grep -q '^lanes_peak_' <<<"$(cluster_job_field "$inf" Reservation)"
e2e_check "the borrowing training job is still pending" test "$(cluster_job_field "$b" JobState)" = PENDING
# Once the training nodes are free it runs there, not on infer1.
cluster_run_ctl scancel "$fill"
e2e_check "the training job then runs" cluster_wait_job "$b" COMPLETED 60
node=$(cluster_job_field "$b" NodeList)
e2e_check "... on a training node, not infer1 ($node)" test "$node" = train1 -o "$node" = train2

e2e_finish
