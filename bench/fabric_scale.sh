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
# 95 % CI, its ratio to noload, requests lost, training aggregate (iperf3
# goodput) and its share of the capacity the other traffic leaves on the
# leaf uplinks (uplink rate x time minus the bytes of the other classes),
# Jain's index between the two jobs, ECMP (packets on each of leaf 1's
# uplinks), and the queueing delay the inference class met in the switches:
# the backlog of its class (priority with Lanes, best effort otherwise) at
# every uplink end, sampled from the qdiscs' counters (every ~0.1-0.3 s, as
# fast as tc answers), over the uplink rate. In the lanes scenario the client
# marks its requests AF41 (an inference gateway's job; it is not a Slurm job).
#
# Environment: LANES_BUILD_DIR (default ./build). Needs root. Exit: 0 done
# (whatever the figures), 1 error, 77 not root.
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
    -e "s|@TRAIN_RATE@|${FS_TRAIN_RATE:-40Mbit}|" -e "s|@TRAIN_CEIL@|${FS_TRAIN_CEIL:-45Mbit}|" \
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
say "cluster: slurmctld + $nodes slurmd up in $((SECONDS - t0)) s"

LS_LEAVES=3 LS_SPINES=2 LS_UPLINK_RATE=$uplink LS_MTU=${FS_MTU:-9000}
export LS_LEAVES LS_SPINES LS_UPLINK_RATE LS_MTU
ls_create 2>>"$out/fabric.log" || die "leaf-spine fabric"
: >"$out/ips"
for ((k = 1; k <= ntrain; k++)); do
    ls_attach "$(cluster_netns "t$k")" $(((k - 1) % 2 + 1)) $((10 + k)) "t$k" 2>>"$out/fabric.log" || die "attach t$k"
    echo "t$k $(ls_ip "t$k")" >>"$out/ips"
done
ls_attach "$(cluster_netns i1)" 1 101 i1 && ls_attach "$(cluster_netns i2)" 2 102 i2 || die "attach inference"
ls_host store 3 9 && ls_host cli 3 10 || die "storage and client hosts"
say "fabric: leaves 1-2 hold t1..t$ntrain alternately, i1 on leaf 1, i2 on leaf 2; leaf 3 storage + client; uplinks $uplink, MTU $LS_MTU"
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
timeout $((seconds + 30)) iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
sleep 2
timeout $((seconds + 20)) iperf3 -c "$nextip" -p "$port" -P 4 -C cubic -t "$seconds" -J >"$out/$RING_LABEL-${ring[$me]}.json" 2>/dev/null
wait
SH
chmod 755 "$out/ring_task.sh"

storage_start() {  # storage_start SECONDS LABEL: one 10 Mbit/s stream to each training node
    local k
    for ((k = 1; k <= ntrain; k++)); do
        ls_spawn store "$out/store-s$k.log" timeout $(($1 + 30)) iperf3 -s -1 -p $((5400 + k))
        PIDS+=("$LS_SPAWNED")
    done
    sleep 0.5
    for ((k = 1; k <= ntrain; k++)); do
        ls_spawn "t$k" "$out/$2-store-t$k.json" timeout $(($1 + 20)) iperf3 -c "$store" -p $((5400 + k)) -R -b 10M -t "$1" -J
        PIDS+=("$LS_SPAWNED")
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
measure() {  # measure LABEL PORT [DSCP]: both replicas, with the switch queues sampled
    local mark=()
    [[ -n ${3:-} ]] && mark=(--dscp "$3")
    ls_queue_sample "$out/$1-queues.txt" "$seconds" 0.05 &
    local qs=$!
    ls_exec cli timeout $((seconds + 10)) "${rt[@]}" "$probe" load --connect "$i1:$2" --rate $((rate / 2)) --duration "$seconds" \
        "${mark[@]}" --congestion cubic --json --samples "$out/$1-i1.samples" >"$out/$1-i1.json" 2>"$out/$1-i1.err" &
    local a=$!
    ls_exec cli timeout $((seconds + 10)) "${rt[@]}" "$probe" load --connect "$i2:$2" --rate $((rate / 2)) --duration "$seconds" \
        "${mark[@]}" --congestion cubic --json --samples "$out/$1-i2.samples" >"$out/$1-i2.json" 2>"$out/$1-i2.err"
    wait "$a"
    wait "$qs"
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
measure noload 7001
stats noload-after
say "noload: done"

ls_qos
stats nolanes-before
storage_start $((seconds + 6)) nolanes
rings_byhand $((seconds + 6)) nolanes
sleep 4
measure nolanes 7001
sleep 4
stats nolanes-after
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
storage_start $((seconds + 8)) lanes
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
stats lanes-after
cluster_run_ctl scancel "$s1" "$s2"
say "lanes: done"

python3 - "$out" "$seconds" "$(cluster_run_ctl true >/dev/null 2>&1; echo "$uplink")" "$jobA" "$jobB" <<'PY'
import json, random, re, sys
out, seconds, uplink, job_a, job_b = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
m = re.match(r"(\d+)(k|m|g)bit", uplink.lower())
rate_bits = int(m.group(1)) * {"k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
def samples(label):
    v = []
    for r in ("i1", "i2"):
        try:
            v += [float(x) for x in open(f"{out}/{label}-{r}.samples")]
        except OSError:
            pass
    return v
def p99(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(0.99 * (len(v) - 1) + 0.5))] if v else float("nan")
def ci(v, n=1000):
    if not v:
        return (float("nan"),) * 2
    rnd = random.Random(24)
    b = sorted(p99([rnd.choice(v) for _ in v]) for _ in range(n))
    return b[int(0.025 * n)], b[int(0.975 * n)]
def lost(label):
    t = 0
    for r in ("i1", "i2"):
        try:
            j = json.load(open(f"{out}/{label}-{r}.json"))
            t += j["errors"] + j["timeouts"] + max(0, j["scheduled"] - j["ok"] - j["errors"] - j["timeouts"])
        except Exception:
            t += 10**9
    return t
def late(label):
    m = 0.0
    for r in ("i1", "i2"):
        try:
            m = max(m, json.load(open(f"{out}/{label}-{r}.json"))["max_send_lag_ms"])
        except Exception:
            pass
    return m
def counters(label):
    c = {}
    for when in ("before", "after"):
        try:
            for line in open(f"{out}/{label}-{when}.txt"):
                f = line.split()
                c.setdefault((f[0], f[1]), {})[when] = [int(x) for x in f[2:]]
        except OSError:
            pass
    return {k: [a - b for a, b in zip(v["after"], v["before"])] for k, v in c.items() if len(v) == 2}
def goodput(label, job):
    tot = 0.0
    for n in job.split(","):
        try:
            tot += json.load(open(f"{out}/{label}-{'A' if job == job_a else 'B'}-{n}.json"))["end"]["sum_received"]["bits_per_second"]
        except Exception:
            pass
    return tot / 1e6
def queue_delay(label, cls):
    # every uplink end: requests cross leaf 3's uplinks and the spines' ports to
    # leaves 1-2, replies the leaf 1-2 uplinks and the spines' ports to leaf 3
    col = {"10": 2, "20": 3}[cls]
    d = []
    try:
        for line in open(f"{out}/{label}-queues.txt"):
            f = line.split()
            if re.match(r"(lf\d/up|sp\d/dn)\d", f[1]):
                d.append(int(f[col]) * 8 / rate_bits * 1000)
    except OSError:
        pass
    if not d:
        return "n/a"
    d.sort()
    return f"mean {sum(d) / len(d):.2f} ms, p99 {d[min(len(d) - 1, int(0.99 * len(d)))]:.2f} ms, max {d[-1]:.2f} ms ({len(d)} samples)"
base = p99(samples("noload"))
print(f"\nfabric_scale: {len(job_a.split(',')) * 2 + 2} nodes, uplinks {uplink} (2 per leaf), {seconds:.0f} s per scenario")
for label in ("noload", "nolanes", "lanes"):
    v = samples(label)
    p, (lo, hi) = p99(v), ci(v)
    c = counters(label)
    leaf_up = {k: v for k, v in c.items() if re.match(r"lf[12]$", k[0])}
    cap_bytes = rate_bits / 8 * seconds * len(leaf_up)
    other = sum(v[1] for v in leaf_up.values()) + (sum(v[2] for v in leaf_up.values()) if label == "lanes" else 0)
    train_class = sum(v[3] for v in leaf_up.values()) if label == "lanes" else sum(v[2] for v in leaf_up.values())
    ga, gb = goodput(label, job_a), goodput(label, job_b)
    jain = (ga + gb) ** 2 / (2 * (ga * ga + gb * gb)) if ga + gb > 0 else float("nan")
    ecmp = " ".join(f"{k[1]}={v[0]}" for k, v in sorted(c.items()) if k[0] == "lf1")
    print(f"\n  {label}: inference p99 {p:.2f} ms (95 % CI {lo:.2f}-{hi:.2f}, {len(v)} requests), x{p / base:.2f} of noload; lost {lost(label)}; client late by up to {late(label):.1f} ms")
    if label != "noload":
        try:
            dt = float(open(f"{out}/{label}-after.time").read()) - float(open(f"{out}/{label}-before.time").read())
        except (OSError, ValueError):
            dt = seconds
        left = max(1.0, rate_bits / 8 * dt * len(leaf_up) - other)
        print(f"    training: job A {ga:.1f} Mbit/s, job B {gb:.1f} Mbit/s, aggregate {ga + gb:.1f}; Jain {jain:.3f}; "
              f"training class bytes / capacity the others left on the leaf uplinks over the {dt:.0f} s window: {100 * train_class / left:.1f} %")
        print(f"    leaf uplinks: {len(leaf_up)} x {uplink}; bytes priority {sum(v[1] for v in leaf_up.values())}, best effort {sum(v[2] for v in leaf_up.values())}, scavenger {sum(v[3] for v in leaf_up.values())}")
    print(f"    ECMP, packets on leaf 1's uplinks: {ecmp}")
    print(f"    switch queueing delay of the inference class ({'priority' if label == 'lanes' else 'best effort'}): {queue_delay(label, '10' if label == 'lanes' else '20')}")
PY
