#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/fabric_scale.sh: the headline at fabric scale (issue 24). A real Slurm
# cluster with both Lanes plugins on a routed leaf-spine fabric
# (bench/leafspine.sh: ECMP over the spines, oversubscribed, DSCP-aware
# uplinks), two multi-node training jobs with ring (all-reduce-like) traffic,
# dataset streams from a storage host, two inference replicas behind one
# open-loop client.
#
#   bench/fabric_scale.sh [--nodes N] [--seconds T] [--rate R] [--uplink RATE]
#                         [--out DIR]
#
# Nodes: N-2 training nodes t1.. (alternately on leaf 1 and leaf 2, so every
# hop of a ring crosses the spines) and inference nodes i1 (leaf 1) and i2
# (leaf 2); leaf 3 holds the storage host and the inference client, so every
# inference reply and dataset stream crosses the fabric too. Training job A
# is the first half of the training nodes, job B the second; each node sends
# 4 TCP streams to the next node of its job (a ring). Storage sends each
# training node a 10 Mbit/s stream (iperf3 -R, unmarked). Inference: one
# inference_probe server per replica, the client sends R/2 requests/s to each.
#
# Scenarios (T seconds of measurement each):
#   noload   inference alone (servers started by hand)
#   nolanes  + training rings and storage started by hand: unmarked, uncapped
#   lanes    + the same, the inference servers and the two training jobs
#            submitted through Slurm (job_submit/lanes picks the class,
#            spank_lanes caps and marks: AF41 inference, CS1 training)
# Printed per scenario: inference p99 over both replicas with a bootstrap
# 95 % CI, its ratio to noload (with a bootstrap CI), requests lost, each
# training job's goodput (iperf3) and Jain's index between the two, ECMP
# (packets on each of leaf 1's uplinks), and the queueing delay the inference
# class met in the switches while the probe ran: the backlog of its class
# (priority with Lanes, best effort otherwise) at every uplink end, sampled
# from the qdiscs' counters (every ~0.1-0.3 s, as fast as tc answers), over
# the uplink rate. In the lanes scenario the client marks its requests AF41
# (an inference gateway's job; it is not a Slurm job).
#
# Training's share (lanes): the same sampler records every class's sent
# bytes at every uplink end for the whole scenario. The steady window is
# the seconds in which every ring and storage stream ran (from iperf3's start
# timestamps and durations), less each ring's first 2 s and the last 1 s.
# Training crosses the fabric on 4 paths (leaf 1 -> leaf 2 and back, each
# over either spine), each two 100 Mbit/s links (leaf upS, then spine dnM):
# the capacity a path leaves training is uplink rate x window minus the
# bytes of the higher classes (priority: inference; best effort: storage) on
# the busier of its two links; the share is the scavenger (training) bytes
# the spines delivered over the sum of the 4 paths' capacity left. Also per
# second of the window (lowest and highest). Written with everything else
# to OUT/summary.json (bench/fabric_scale_runs.sh tabulates runs).
#
# Environment: LANES_BUILD_DIR (default ./build); FS_TRAIN_RATE and
# FS_TRAIN_CEIL, the training class's per-node rate and ceil (default 2/5
# and 2x the uplink rate: 40Mbit and 200Mbit with 100mbit uplinks); FS_MTU
# (9000); FS_QUEUE_FRAMES (100), the switch ports' queue per DSCP class in
# frames (bench/leafspine.sh's LS_LIMIT: 100 frames of 9000 bytes are 72 ms at
# 100 Mbit/s, already far deeper in time than a data-centre switch's per-port
# buffer; 1000 made TCP's losses come in bursts that left a path idle for
# seconds, see docs/benchmark.md). Needs root. Exit: 0 done (whatever the figures), 1 error, 77 not
# root.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)
build=${LANES_BUILD_DIR:-$src/build}
nodes=10 seconds=10 rate=200 uplink=100mbit out=""
while (($#)); do
    case $1 in
        --nodes) nodes=$2; shift ;;
        --seconds) seconds=$2; shift ;;
        --rate) rate=$2; shift ;;
        --uplink) uplink=$2; shift ;;
        --out) out=$2; shift ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "fabric_scale: unknown option '$1'" >&2; exit 1 ;;
    esac
    shift
done
say() { printf 'fabric_scale: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
[[ $nodes =~ ^[0-9]+$ ]] && ((nodes >= 6 && nodes % 2 == 0)) || die "--nodes must be even and >= 6 (4 training + 2 inference)"
[[ $seconds =~ ^[1-9][0-9]*$ && $rate =~ ^[1-9][0-9]*$ ]] || die "--seconds and --rate must be positive numbers"
[[ ${uplink,,} =~ ^([1-9][0-9]*)(kbit|mbit|gbit)$ ]] || die "--uplink must be a rate such as 100mbit"
# The training class's defaults: guaranteed 2/5 of an uplink per node (8
# nodes x 40 = 320 Mbit/s, what the fabric leaves after storage), and a ceil
# of a leaf's uplink capacity (2 x the uplink rate), so that training can
# take whatever inference and storage leave: the switches' DSCP classes, not
# the ceil, keep it behind them. Below the NIC's 1 Gbit/s, so the job stays
# "capped" and spank_lanes' GSO burst bound applies.
train_rate=${FS_TRAIN_RATE:-$((BASH_REMATCH[1] * 2 / 5))${BASH_REMATCH[2]}}
train_ceil=${FS_TRAIN_CEIL:-$((BASH_REMATCH[1] * 2))${BASH_REMATCH[2]}}
((EUID == 0)) || { echo "SKIP: fabric_scale needs root"; exit 77; }
for t in iperf3 nsenter ethtool jq python3 sbatch; do
    command -v "$t" >/dev/null || { echo "SKIP: fabric_scale needs $t"; exit 77; }
done
probe=$build/bench/inference_probe
for f in "$probe" "$build/spank/.libs/spank_lanes.so" "$build/job_submit/.libs/job_submit_lanes.so"; do
    [[ -e $f ]] || die "no $f: build first"
done
[[ -n $out ]] || out=$(mktemp -d "${TMPDIR:-/tmp}/lanes-fabric-scale.XXXXXX")
mkdir -p "$out" || exit 1
export LANES_SRCDIR=$src LANES_BUILDDIR=$build
export LANES_POLICY_WORKER=${LANES_POLICY_WORKER:-$build/policy_worker/lanes-policy-worker}
# shellcheck source=tests/cluster/cluster.sh
source "$src/tests/cluster/cluster.sh"
# shellcheck source=bench/leafspine.sh
source "$src/bench/leafspine.sh"

ntrain=$((nodes - 2)) half=$(((nodes - 2) / 2))
# The inference server and client run SCHED_FIFO (as in the demo): only the
# machine itself can delay them, and the client's "late by" shows when it did.
rt=()
chrt -f 50 true 2>/dev/null && rt=(chrt -f 50)
spec="" train=()
for ((k = 1; k <= ntrain; k++)); do spec+="t$k:training:train "; train+=("t$k"); done
spec+="i1:inference:lowlat i2:inference:lowlat"
jobA=$(IFS=,; echo "${train[*]:0:half}") jobB=$(IFS=,; echo "${train[*]:half}")
printf 'seconds=%s\nuplink=%s\njob_a=%s\njob_b=%s\ntrain_rate=%s\ntrain_ceil=%s\n' \
    "$seconds" "$uplink" "$jobA" "$jobB" "$train_rate" "$train_ceil" >"$out/params" || exit 1
tag=fs$$
state_root=/run/lanes-$tag
cg_root=/sys/fs/cgroup/unified/lanes-$tag
[[ -d /sys/fs/cgroup/unified ]] || cg_root=/sys/fs/cgroup/lanes-$tag
conf=$(mktemp -d) || exit 1
declare -a PIDS=()

teardown() {
    local rc=$? p
    trap - EXIT INT TERM
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    ls_destroy
    cluster_stop "$rc" >/dev/null 2>&1
    rm -rf "$state_root" "$conf"
    find "$cg_root" -depth -type d -exec rmdir {} + 2>/dev/null
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# lanes.toml: the demo's classes; every node shapes its fabric NIC fab0.
hhmm() { date -u -d "@$(($(date +%s) + $1 * 60))" +%H:%M; }
sed -e "s|@PEAK_START@|$(hhmm 180)|" -e "s|@PEAK_END@|$(hhmm 360)|" \
    -e "s|@TRAIN_RATE@|$train_rate|" -e "s|@TRAIN_CEIL@|$train_ceil|" \
    -e "s|@STATE_ROOT@|$state_root|" -e "s|@CGROUP_ROOT@|$cg_root|" \
    -e '/^\[\[nodes.nic\]\]/,$d' "$src/contrib/demo/lanes.toml.in" >"$conf/lanes.toml" || exit 1
cat >>"$conf/lanes.toml" <<'TOML'
[[nodes.nic]]
nodes = "*"
device = "fab0"
link_speed = "1Gbit"
TOML
cp "$src/policies/default.lua" "$conf/lanes.lua" || exit 1
export LANES_CLUSTER_TOML=$conf/lanes.toml LANES_CLUSTER_FILES=$conf/lanes.lua
export LANES_CLUSTER_PLUGINDIR=$build/job_submit/.libs LANES_CLUSTER_CONF_EXTRA="JobSubmitPlugins=lanes"
export LANES_CLUSTER_NODES=$spec LANES_CLUSTER_TIMEOUT=${LANES_CLUSTER_TIMEOUT:-180} LANES_CLUSTER_CPUS=2
cluster_hook_pre_start() {
    local spank_dir
    spank_dir=$(cluster_plugin_copy_dir) && install -m 0644 -- "$build/spank/.libs/spank_lanes.so" "$spank_dir/" || return 1
    printf 'required %s config=%s/lanes.toml last_good_config=%s/last-good.toml\n' \
        "$spank_dir/spank_lanes.so" "$1" "$state_root" >"$1/plugstack.conf"
}
t0=$SECONDS
cluster_start >"$out/cluster-start.log" 2>&1 || { cluster_dump_logs >>"$out/cluster-start.log" 2>&1; die "the cluster did not start ($out/cluster-start.log)"; }
say "cluster: slurmctld + $nodes slurmd up in $((SECONDS - t0)) s; training class rate $train_rate ceil $train_ceil per node"

LS_LEAVES=3 LS_SPINES=2 LS_UPLINK_RATE=$uplink LS_MTU=${FS_MTU:-9000} LS_LIMIT=${FS_QUEUE_FRAMES:-100}
export LS_LEAVES LS_SPINES LS_UPLINK_RATE LS_MTU LS_LIMIT
ls_create 2>>"$out/fabric.log" || die "leaf-spine fabric"
: >"$out/ips"
for ((k = 1; k <= ntrain; k++)); do
    ls_attach "$(cluster_netns "t$k")" $(((k - 1) % 2 + 1)) $((10 + k)) "t$k" 2>>"$out/fabric.log" || die "attach t$k"
    echo "t$k $(ls_ip "t$k")" >>"$out/ips"
done
ls_attach "$(cluster_netns i1)" 1 101 i1 && ls_attach "$(cluster_netns i2)" 2 102 i2 || die "attach inference"
ls_host store 3 9 && ls_host cli 3 10 || die "storage and client hosts"
say "fabric: leaves 1-2 hold t1..t$ntrain alternately, i1 on leaf 1, i2 on leaf 2; leaf 3 storage + client; uplinks $uplink, MTU $LS_MTU, $LS_LIMIT frames a class"
i1=$(ls_ip i1) i2=$(ls_ip i2) store=$(ls_ip store)

# Job and by-hand scripts.
cat >"$out/ring_task.sh" <<'SH'
#!/bin/bash
# ring_task.sh PORT SECONDS NODE,NODE,... OUTDIR: this task's node sends 4
# streams to the next node of the list (SLURM_PROCID or RING_INDEX is its place).
port=$1 seconds=$2 out=$4
IFS=, read -ra ring <<<"$3"
me=${RING_INDEX:-$SLURM_PROCID}
next=${ring[$(((me + 1) % ${#ring[@]}))]}
env | grep '^LANES_' >"$out/$RING_LABEL-${ring[$me]}.env"  # what spank_lanes told the task
nextip=$(awk -v n="$next" '$1 == n { print $2 }' "$out/ips")
timeout $((seconds + 60)) iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
sleep 2
# The next node's task may start later than this one (srun launches them one
# by one; on a busy host seconds apart): a refused connection is tried again,
# every 0.5 s for up to 30 s, never a stream that ran.
for try in $(seq 60); do
    timeout $((seconds + 20)) iperf3 -c "$nextip" -p "$port" -P 4 -C cubic -t "$seconds" -J >"$out/$RING_LABEL-${ring[$me]}.json" 2>/dev/null && break
    grep -q '"error":.*Connection refused' "$out/$RING_LABEL-${ring[$me]}.json" || break
    sleep 0.5
done
wait
SH
chmod 755 "$out/ring_task.sh"

storage_start() {  # storage_start SECONDS LABEL: one 10 Mbit/s stream to each training node (clients in storage_clients)
    local k
    storage_clients=()
    for ((k = 1; k <= ntrain; k++)); do
        ls_spawn store "$out/store-s$k.log" timeout $(($1 + 30)) iperf3 -s -1 -p $((5400 + k))
        PIDS+=("$LS_SPAWNED")
    done
    sleep 0.5
    for ((k = 1; k <= ntrain; k++)); do
        ls_spawn "t$k" "$out/$2-store-t$k.json" timeout $(($1 + 20)) iperf3 -c "$store" -p $((5400 + k)) -R -b 10M -t "$1" -J
        PIDS+=("$LS_SPAWNED")
        storage_clients+=("$LS_SPAWNED")
    done
}
ring_port() { [[ $1 == A ]] && echo 5300 || echo 5301; }
rings_byhand() {  # rings_byhand SECONDS LABEL
    local j list idx n
    for j in A B; do
        list=$([[ $j == A ]] && echo "$jobA" || echo "$jobB")
        IFS=, read -ra members <<<"$list"
        for idx in "${!members[@]}"; do
            n=${members[idx]}
            ls_spawn "$n" "$out/$2-$j-$n.log" \
                env RING_INDEX="$idx" RING_LABEL="$2-$j" bash "$out/ring_task.sh" "$(ring_port "$j")" "$1" "$list" "$out"
            PIDS+=("$LS_SPAWNED")
        done
    done
}
sampler_start() {  # sampler_start LABEL: the uplinks' queues and bytes until sampler_stop
    ls_queue_sample "$out/$1-queues.txt" $((seconds + 120)) 0.05 &
    sampler=$!
    PIDS+=("$sampler")
}
sampler_stop() { kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; }
measure() {  # measure LABEL PORT [DSCP]: both replicas (the caller samples the switch queues)
    local mark=()
    [[ -n ${3:-} ]] && mark=(--dscp "$3")
    echo "$EPOCHREALTIME" >"$out/$1-probe.start"
    ls_exec cli timeout $((seconds + 10)) "${rt[@]}" "$probe" load --connect "$i1:$2" --rate $((rate / 2)) --duration "$seconds" \
        "${mark[@]}" --congestion cubic --json --samples "$out/$1-i1.samples" >"$out/$1-i1.json" 2>"$out/$1-i1.err" &
    local a=$!
    ls_exec cli timeout $((seconds + 10)) "${rt[@]}" "$probe" load --connect "$i2:$2" --rate $((rate / 2)) --duration "$seconds" \
        "${mark[@]}" --congestion cubic --json --samples "$out/$1-i2.samples" >"$out/$1-i2.json" 2>"$out/$1-i2.err"
    wait "$a"
    echo "$EPOCHREALTIME" >"$out/$1-probe.end"
}

# noload and nolanes: inference servers by hand.
for n in i1 i2; do
    ls_spawn "$n" "$out/serve-$n.log" "${rt[@]}" "$probe" serve --listen "$(ls_ip "$n"):7001" --congestion cubic
    PIDS+=("$LS_SPAWNED")
done
sleep 0.5
ls_qos
stats() { ls_uplink_stats >"$out/$1.txt"; echo "$EPOCHREALTIME" >"$out/$1.time"; }
stats noload-before
sampler_start noload
measure noload 7001
sampler_stop
stats noload-after
say "noload: done"

ls_qos
stats nolanes-before
sampler_start nolanes
storage_start $((seconds + 6)) nolanes
rings_byhand $((seconds + 6)) nolanes
sleep 4
measure nolanes 7001
sleep 4
stats nolanes-after
sampler_stop
say "nolanes: done"

# lanes: everything that is a job goes through Slurm.
cat >"$out/serve.sh" <<SH
#!/bin/sh
exec ${rt[*]} "$probe" serve --listen "\$(awk -v n="\$SLURMD_NODENAME" '\$1 == n { print \$2 }' "$out/ips.all"):7000" --congestion cubic
SH
cat "$out/ips" >"$out/ips.all"
echo "i1 $i1" >>"$out/ips.all"
echo "i2 $i2" >>"$out/ips.all"
chmod 755 "$out/serve.sh"
submit() { (cd "$CLUSTER_WORK_DIR" && cluster_run_ctl sbatch --parsable "$@" 2>&1) | tail -1 | cut -d';' -f1; }
s1=$(submit -J serve-a -p inference --exclusive -o /dev/null "$out/serve.sh")
s2=$(submit -J serve-b -p inference --exclusive -o /dev/null "$out/serve.sh")
ls_qos
stats lanes-before
sampler_start lanes
# Storage outlasts the rings (they start once Slurm has run the jobs), so
# that the steady window is every ring's, not cut short by storage's end.
storage_start $((seconds + 14)) lanes
jids=()
for j in A B; do
    list=$([[ $j == A ]] && echo "$jobA" || echo "$jobB")
    cat >"$out/train-$j.sh" <<SH
#!/bin/bash
RING_LABEL=lanes-$j srun --ntasks-per-node=1 --export=ALL,RING_LABEL=lanes-$j bash "$out/ring_task.sh" $(ring_port "$j") $((seconds + 6)) "$list" "$out"
SH
    chmod 755 "$out/train-$j.sh"
    jids+=("$(submit -J "train-$j" -N "$half" -w "$list" --lanes-class=training -t 10 -o "$out/train-$j.out" "$out/train-$j.sh")")
done
say "lanes: jobs serve $s1 $s2, train ${jids[*]}"
for id in "$s1" "$s2" "${jids[@]}"; do
    [[ $id =~ ^[0-9]+$ ]] || die "a submission failed: '$id'"
    cluster_wait_job "$id" RUNNING 60 >/dev/null || die "job $id did not start"
done
for id in "$s1" "$s2" "${jids[@]}"; do
    cluster_run_ctl scontrol show job "$id" | grep -oE '(JobName|Partition|Comment)=[^ ]+' | tr '\n' ' ' >>"$out/lanes-jobs.txt"
    echo >>"$out/lanes-jobs.txt"
done
sleep 4
# The client is the service's front end, not a job: it marks its requests
# AF41 itself, as an inference gateway would (the replies carry spank_lanes'
# AF41 marks).
measure lanes 7000 AF41
cluster_run_node t1 tc -s class show dev fab0 >"$out/lanes-t1-classes.txt" 2>&1
for id in "${jids[@]}"; do cluster_wait_job "$id" COMPLETED $((seconds + 60)) >/dev/null; done
for p in "${storage_clients[@]}"; do wait "$p"; done  # their JSON: when each stream ran
stats lanes-after
sampler_stop
cluster_run_ctl scancel "$s1" "$s2"
say "lanes: done"

python3 "$here/fabric_scale_report.py" "$out"
