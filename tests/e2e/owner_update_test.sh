#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What a job's owner may change with `scontrol update` (issue #20 item 5), one
# check per row of the table in lanes-policy(7) ("What a job's owner may
# change"): what the owner sees, what slurmctld holds afterwards, and that
# judging an update reads no file under slurmctld's locks. One cluster, one
# pending training job deferred out of the peak (nice 100, feature "train").
#
# Fails on the old code (job_modify read the job through
# copy_job_record_to_job_desc()) for: Nice=0 (accepted, the class's nice gone),
# a StartTime outside the window (refused outright), and every TimeLimit change
# (it read the job's environment file: "Could not open environment file").
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root

# The training class gets a nice and a required feature (e2e.sh's base config
# has neither), and defers jobs that would run into the peak (instead of warning).
e2e_pre_start() {
    sed -i -e '/^\[classes.training\]/a nice = 100\nfeatures = ["train"]' \
        -e 's/^window_overrun = "warn"/window_overrun = "defer"/' "$1/lanes.toml"
}
e2e_start_cluster "SchedulerType=sched/backfill"
user=$(cluster_test_user)
uid=$(id -u "$user")
log=$(cluster_log slurmctld)
version=$(cluster_run_ctl scontrol --version | awk '{print $2}')
# Slurm 22.05's job_modify() has no err_msg: the owner sees only the text of
# the code; 23.02 and later also show Lanes' message.
if [[ ${version%%.*} -ge 23 ]]; then new_api=1; else new_api=0; fi

submit() {
    local out
    out=$(cluster_run_as "$user" sbatch --parsable "$@" 2>&1) || { echo "sbatch failed: $out" >&2; return 1; }
    grep -E '^[0-9]+' <<<"$out" | tail -1 | cut -d';' -f1
}
field() { cluster_job_field "$id" "$1"; }
# update FIELD=VALUE...: as the owner; sets out and rc.
update() {
    out=$(cluster_run_as "$user" scontrol update jobid="$id" "$@" 2>&1)
    rc=$?
}
# refused ROW STRERROR LANES_TEXT: the last update failed, the owner saw Slurm's
# text for the code (and, 23.02+, Lanes' message), and slurmctld logged why.
refused() {
    local row=$1 strerror=$2 text=$3
    e2e_check "$row: refused (rc $rc: $out)" test "$rc" -ne 0
    e2e_check "$row: the owner sees '$strerror' ($out)" grep -qF "$strerror" <<<"$out"
    if ((new_api)); then
        e2e_check "$row: the owner sees Lanes' reason ($out)" grep -qF "$text" <<<"$out"
    fi
    e2e_check "$row: slurmctld logged 'refused update by uid $uid: ...$text...'" \
        grep -qF "lanes: JobId=$id: refused update by uid $uid: ${text#lanes: }" "$log"
}
allowed() {
    local row=$1
    e2e_check "$row: allowed (rc $rc: $out)" test "$rc" -eq 0
}
denied='Access/permission denied'

id=$(submit -J train-owner -t 30 -o /dev/null --wrap 'sleep 1')
e2e_check "training job submitted at peak ($id)" test -n "$id"
begin=$(field EligibleTime)
e2e_check "deferred to the window's end ($begin ~ $E2E_PEAK_END)" test "${begin:11:5}" = "$E2E_PEAK_END"
e2e_check "the class's nice is set" test "$(field Nice)" = 100
e2e_check "the class's feature is set" test "$(field Features)" = train
other=$(submit -J train-dep -t 30 -o /dev/null --wrap 'sleep 1')

# Nice: not below the class's (it would jump the jobs the class yields to).
update Nice=0
refused "Nice=0" "$denied" "lanes: Nice=0 is below the nice of 100 that its class training gives it"
e2e_check "Nice=0: nice still 100" test "$(field Nice)" = 100
update Nice=99
refused "Nice=99" "$denied" "Nice=99 is below the nice of 100"
update Nice=250
allowed "Nice=250 (lower priority)"
e2e_check "Nice=250: nice is 250" test "$(field Nice)" = 250
update Nice=100
allowed "Nice=100 (back to the class's)"
e2e_check "Nice=100: nice is 100" test "$(field Nice)" = 100

# Partition, QOS, Features, Reservation: the routing itself.
update Partition=inference
refused "Partition" "$denied" "lanes: the partition decides the job's traffic class and routing"
e2e_check "Partition: still training" test "$(field Partition)" = training
update QOS=normal
refused "QOS" "$denied" "lanes: the QOS decides"
update Features=lowlat
refused "Features" "$denied" "lanes: the feature list (--constraint) decides"
e2e_check "Features: still train" test "$(field Features)" = train
update Reservation=maint
refused "Reservation" "$denied" "lanes: the reservation decides"

# StartTime: not into the window the class keeps the job out of; after it, yes.
update StartTime=now
refused "StartTime=now" "$denied" "lanes: the start time of this training job cannot be moved to now: its class keeps such jobs out of the peak window"
e2e_check "StartTime=now: still the window's end" test "$(field EligibleTime)" = "$begin"
later=$(date -u -d "@$(($(date +%s) + 150 * 60))" +%Y-%m-%dT%H:%M:00)
update StartTime="$later"
allowed "StartTime after the window ($later)"
e2e_check "StartTime after the window: held ($(field EligibleTime))" test "$(field EligibleTime)" = "$later"

# TimeLimit: judged from the job record, never from StateSaveLocation's files.
# Remove the job's environment file: the old code's copy_job_record_to_job_desc()
# logs "Could not open environment file" when it looks for it.
state=$(awk -F= '$1 == "StateSaveLocation" {print $2}' "$CLUSTER_CONF")
rm -f "$state/hash.$((id % 10))/job.$id/environment"
update TimeLimit=20
allowed "TimeLimit=20 (shorter)"
e2e_check "TimeLimit=20: held" test "$(field TimeLimit)" = 00:20:00
update TimeLimit=60
allowed "TimeLimit=60 (longer, still clear of the next window)"
e2e_check "TimeLimit=60: held" test "$(field TimeLimit)" = 01:00:00
# From its StartTime (now+150m) the next peak (now+23h30m) leaves 21h; 22h fits
# between two peaks (22h30m), so the class would defer such a job: refused.
update TimeLimit=22:00:00
refused "TimeLimit=22:00:00 (into the next peak)" "Requested time limit is invalid" \
    "lanes: the time limit of this training job cannot be raised to 22h: it would run into an avoided window"
e2e_check "TimeLimit=22:00:00: still 1 hour" test "$(field TimeLimit)" = 01:00:00
e2e_check "no file of the job was read for its updates" \
    bash -c "! grep -F 'environment file for JobId=$id' '$log'"

# Account, Name, Comment, GRES, node and task counts: what the job was classified on.
update Account=other
refused "Account" "$denied" "lanes: the account decides"
update Name=infer-sneaky
refused "Name" "$denied" "lanes: the job name decides"
e2e_check "Name: unchanged" test "$(field JobName)" = train-owner
update Comment=infer
refused "Comment" "$denied" "lanes: the comment decides"
update Gres=gpu:1
refused "Gres" "$denied" "lanes: the GRES/TRES request decides"
update NumNodes=2
refused "NumNodes" "$denied" "lanes: the node count decides"
e2e_check "NumNodes: still 1" test "$(field NumNodes)" = 1
update NumTasks=4
refused "NumTasks" "$denied" "lanes: the task count decides"

# Allowed: what Lanes neither routes nor classifies on.
update Dependency=afterany:"$other"
allowed "Dependency"
e2e_check "Dependency: held ($(field Dependency))" grep -q "afterany:$other" <<<"$(field Dependency)"
update MailType=END
allowed "MailType"
cluster_run_as "$user" scontrol hold "$id" >/dev/null 2>&1
e2e_check "hold: priority 0" test "$(field Priority)" = 0
cluster_run_as "$user" scontrol release "$id" >/dev/null 2>&1
e2e_check "release: priority back" test "$(field Priority)" != 0
update WCKey=projx
e2e_check "WCKey: not refused by Lanes ($out)" bash -c "! grep -qF 'lanes: JobId=$id: refused update by uid $uid: the WCKey' '$log'"

# Admins keep their powers.
e2e_check "root may set Nice=0" cluster_run_ctl scontrol update jobid="$id" Nice=0
e2e_check "root's Nice=0: held" test "$(field Nice)" = 0
e2e_check "root may start it now" cluster_run_ctl scontrol update jobid="$id" StartTime=now
cluster_run_ctl scancel "$id" "$other"

e2e_finish
