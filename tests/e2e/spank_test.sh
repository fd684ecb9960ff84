#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spank_lanes on a real cluster: a training job gets its HTB class, nft marks,
# cgroup and task environment on its node; its packets carry the DSCP on the wire
# (IPv4 and IPv6) and its class carries and throttles its traffic; an inference
# job gets its marks; cancel and time limit leave nothing behind.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
E2E_MODE=offpeak e2e_start_cluster
work=$CLUSTER_WORK_DIR
state_root=$E2E_STATE_ROOT
cgroup_root=$E2E_CGROUP_ROOT
infer_ip=${CLUSTER_NODE_IP[infer1]}
infer_ip6=${CLUSTER_NODE_IP6[infer1]}

node_tc() { cluster_run_node "$1" tc class show dev eth0; }
node_nft() { cluster_run_node "$1" nft list table inet lanes 2>/dev/null; }
# Job ID's cgroup id on NODE (its dir's inode), taken while the job runs: nft
# lists an element by id when the dir went away during its walk.
cg_id() { stat -c %i "$cgroup_root/$1/job_$2" 2>/dev/null || echo none; }
leftovers() {  # prints anything of job $2 (cgroup id $3, if known) left on node $1
    local node=$1 id=$2 re="job_$id\\b"
    [[ -n ${3:-} && $3 != none ]] && re+="|(^|[^0-9])$3([^0-9]|\$)"
    node_tc "$node" | grep -E "class htb 1a4e:" | grep -v -E '1a4e:(1|fffe) ' || true
    node_nft "$node" | sed -E 's/packets [0-9]+ bytes [0-9]+//' | grep -E "$re" || true
    ls "$state_root/$node/job_$id" 2>/dev/null || true
    ls -d "$cgroup_root/$node/job_$id" 2>/dev/null || true
}

# Servers on infer1 for the training job's traffic (bounded: each serves one test).
cluster_run_node infer1 iperf3 -s -1 -D -p 5201 --logfile "$work/iperf-s4.log"
cluster_run_node infer1 iperf3 -s -1 -D -p 5202 --logfile "$work/iperf-s6.log"
sleep 0.5

# Capture the training node's packets on the fabric bridge while the job runs.
cap4=$work/dscp4.txt cap6=$work/dscp6.txt
cluster_run_fab timeout 25 tcpdump -i br0 -n -v -c 20 "src host ${CLUSTER_NODE_IP[train1]} and tcp dst port 5201" >"$cap4" 2>/dev/null &
tcpdump4=$!
cluster_run_fab timeout 25 tcpdump -i br0 -n -v -c 20 "ip6 and tcp dst port 5202" >"$cap6" 2>/dev/null &
tcpdump6=$!
sleep 1

cat >"$work/train.sh" <<SH
#!/bin/sh
env | grep -E '^(LANES_|NCCL_IB_|UCX_IB_)' | sort >"$work/train-env-\$SLURM_JOB_ID"
cat /proc/self/cgroup | grep '^0::' >"$work/train-cgroup-\$SLURM_JOB_ID"
iperf3 -c $infer_ip -p 5201 -t 3 -J >"$work/train-iperf4-\$SLURM_JOB_ID.json"
iperf3 -6 -c $infer_ip6 -p 5202 -t 1 >/dev/null
sleep 300
SH
chmod 755 "$work/train.sh"
id=$(cluster_sbatch -J train-spank -w train1 -p training -o "$work/train-%j.out" "$work/train.sh")
e2e_check "training job starts" cluster_wait_job "$id" RUNNING 30
for _ in $(seq 100); do [[ -s $work/train-env-$id ]] && break; sleep 0.1; done

# Kernel state on train1.
tc_out=$(node_tc train1)
e2e_check "train1 has an HTB leaf class for the job with rate 40Mbit ceil 60Mbit" \
    grep -qE 'class htb 1a4e:[0-9a-f]+ parent 1a4e:1 .*rate 40Mbit ceil 60Mbit' <<<"$tc_out"
nft_out=$(node_nft train1)
e2e_check "train1 nft maps job_$id's cgroup to its HTB class" \
    e2e_nft_holds train1 map prio "$E2E_CGROUP_ROOT/train1/job_$id" ' : 1a4e:'
e2e_check "and puts it in the DSCP cs1 set" \
    e2e_nft_holds train1 set dscp_8 "$E2E_CGROUP_ROOT/train1/job_$id"
e2e_check "the out chain sets DSCP cs1 for that set" grep -q "@dscp_8 ip dscp set cs1" <<<"$nft_out"
e2e_check "state file exists, root-only" test "$(stat -c %a "$state_root/train1/job_$id" 2>/dev/null)" = 600
e2e_check "job's task runs in the job's cgroup" grep -q "lanes-e2e-$CLUSTER_TAG/train1/job_$id" "$work/train-cgroup-$id"
e2e_check "train2 has nothing of the job" test -z "$(leftovers train2 "$id")"
# One grep of the JobId finds the job in slurmctld's log (Slurm's own lines)
# and in train1's slurmd log (Lanes' prolog line, named as Slurm names jobs).
e2e_check "grep JobId=$id finds the job in slurmctld's log" grep -q "JobId=$id " "$(cluster_log slurmctld)"
e2e_check "and Lanes' prolog line in train1's slurmd log" \
    grep -q "lanes: JobId=$id class training shaped" "$(cluster_log train1)"

# Task environment.
env_out=$(cat "$work/train-env-$id" 2>/dev/null)
e2e_check "task sees LANES_CLASS=training" grep -qx 'LANES_CLASS=training' <<<"$env_out"
e2e_check "task sees NCCL_IB_TC=32 (CS1<<2)" grep -qx 'NCCL_IB_TC=32' <<<"$env_out"
e2e_check "task sees UCX_IB_TRAFFIC_CLASS=32" grep -qx 'UCX_IB_TRAFFIC_CLASS=32' <<<"$env_out"
e2e_check "task sees NCCL_IB_SL=1" grep -qx 'NCCL_IB_SL=1' <<<"$env_out"

# lanesctl on the node sees the live job with its class and counters, and gc
# keeps it (its slurmstepd is alive).
lanesctl=$E2E_LANESCTL
status_json=$(cluster_run_node train1 "$lanesctl" --json status --config "$CLUSTER_CONF_DIR/lanes.toml" --node train1)
e2e_check "lanesctl status shows job $id as training with traffic counted" python3 -c '
import json, sys
jobs = {j["job_id"]: j for j in json.loads(sys.argv[1])["jobs"]}
j = jobs[int(sys.argv[2])]
assert j["class"] == "training" and j["dscp"] == "CS1", j
d = j["devices"][0]
assert d["device"] == "eth0" and d["ceil_bits"] == 60000000 and d["packets"] > 0, d
' "$status_json" "$id"
gc_out=$(cluster_run_node train1 "$lanesctl" --json gc --config "$CLUSTER_CONF_DIR/lanes.toml" --node train1)
e2e_check "lanesctl gc keeps the running job" python3 -c '
import json, sys
r = json.loads(sys.argv[1])
assert not r["removed"] and any(k["job_id"] == int(sys.argv[2]) for k in r["kept"]), r
' "$gc_out" "$id"

# Wire: DSCP CS1 is TOS 0x20 (IPv4) / traffic class 0x20 (IPv6).
for _ in $(seq 100); do grep -q '"end"' "$work/train-iperf4-$id.json" 2>/dev/null && break; sleep 0.2; done
wait "$tcpdump4" "$tcpdump6" 2>/dev/null
e2e_check "IPv4 packets of the job carry tos 0x20 on the wire" grep -q 'tos 0x20' "$cap4"
e2e_check "no IPv4 packet of the job is unmarked" bash -c "! grep -E '^[0-9:.]+ IP \\(tos 0x0,' '$cap4'"
e2e_check "IPv6 packets of the job carry class 0x20 on the wire" grep -q 'class 0x20' "$cap6"

# Cap: the job's traffic went through its class, and the class held it back
# (HTB overlimits); the goodput against the 60 Mbit/s ceil is a figure only.
read -r got bps < <(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]["sum_received"]; print(int(e["bytes"]), int(e["bits_per_second"]))' \
    "$work/train-iperf4-$id.json" 2>/dev/null || echo 0 0)
status_json=$(cluster_run_node train1 "$lanesctl" --json status --config "$CLUSTER_CONF_DIR/lanes.toml" --node train1)
e2e_check "the job's class counted its $got received bytes and throttled it (goodput $bps bit/s, ceil 60 Mbit/s)" \
    python3 -c '
import json, sys
jobs = {j["job_id"]: j for j in json.loads(sys.argv[1])["jobs"]}
d = jobs[int(sys.argv[2])]["devices"][0]
got = int(sys.argv[3])
assert got > 0 and d["bytes"] >= got and d["overlimits"] > 0, (got, d)
' "$status_json" "$id" "$got"

# Inference job on infer1: marks (AF41), no cap configured.
iid=$(cluster_sbatch -J infer-svc -w infer1 -p inference -o /dev/null --wrap 'sleep 300')
e2e_check "inference job starts" cluster_wait_job "$iid" RUNNING 30
for _ in $(seq 50); do e2e_nft_holds infer1 set dscp_34 "$E2E_CGROUP_ROOT/infer1/job_$iid" && break; sleep 0.1; done
e2e_check "infer1 marks af41" e2e_nft_holds infer1 set dscp_34 "$E2E_CGROUP_ROOT/infer1/job_$iid"
cgid=$(cg_id train1 "$id") icgid=$(cg_id infer1 "$iid")

# Cancel: everything goes.
cluster_run_ctl scancel "$id" "$iid"
cluster_wait_job "$id" CANCELLED 30 >/dev/null
cluster_wait_job "$iid" CANCELLED 30 >/dev/null
for _ in $(seq 50); do [[ -z $(leftovers train1 "$id" "$cgid")$(leftovers infer1 "$iid" "$icgid") ]] && break; sleep 0.2; done
e2e_check "after scancel nothing of the training job is left ($(leftovers train1 "$id" "$cgid"))" test -z "$(leftovers train1 "$id" "$cgid")"
e2e_check "after scancel nothing of the inference job is left" test -z "$(leftovers infer1 "$iid" "$icgid")"

# A class without network settings: nothing is shaped, and tasks launch normally.
pid=$(cluster_sbatch --lanes-class=plain -J plain-job -w train2 -p training -o "$work/plain-%j.out" \
    --wrap 'srun hostname')
e2e_check "a job of a class without network settings completes (srun included)" cluster_wait_job "$pid" COMPLETED 60
e2e_check "its step ran on train2" grep -qx train2 "$work/plain-$pid.out"

# Time limit: a 1-minute job that would run 5 minutes.
tid=$(cluster_sbatch -J train-timeout -t 1 -w train2 -p training -o /dev/null --wrap 'sleep 300')
e2e_check "time-limited job starts" cluster_wait_job "$tid" RUNNING 30
# RUNNING can be reported while the node's prolog is still applying the class.
tmarked() { e2e_nft_holds train2 map prio "$E2E_CGROUP_ROOT/train2/job_$tid" ' : 1a4e:'; }
for _ in $(seq 50); do tmarked && break; sleep 0.1; done
e2e_check "time-limited job has its class while running" tmarked
tcgid=$(cg_id train2 "$tid")
e2e_check "job times out" cluster_wait_job "$tid" TIMEOUT 150
for _ in $(seq 50); do [[ -z $(leftovers train2 "$tid" "$tcgid") ]] && break; sleep 0.2; done
e2e_check "after time limit nothing is left" test -z "$(leftovers train2 "$tid" "$tcgid")"

e2e_finish
