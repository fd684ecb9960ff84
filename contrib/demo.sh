#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Lanes demo: one command on a fresh Debian 12 machine, as root.
#
#   bash contrib/demo.sh
#
# Installs what is needed (apt), builds, starts a real Slurm cluster (munged,
# slurmctld, slurmd train1 train2 infer1 in network namespaces) with
# job_submit/lanes and spank_lanes loaded from an example lanes.toml and
# policies/default.lua, hangs the nodes off a shared 200 Mbit/s fabric uplink
# whose switch trusts DSCP, and then measures inference latency and training
# throughput three ways: no load, training without Lanes, training with Lanes.
# Everything is torn down at the end, also on Ctrl-C.
#
# Settings: DEMO_SECONDS (per phase, default 12), DEMO_RATE (inference requests
# per second, default 200), DEMO_CONNECTIONS (inference client connections,
# default 16), DEMO_CC (TCP congestion control of training and inference,
# default cubic, Linux's default), DEMO_RT=0 (the probe without SCHED_FIFO),
# DEMO_FABRIC_MTU (default 9000, jumbo frames as on AI fabrics; 1500 makes the
# 2 vCPUs forward six times the packets, see docs/benchmark.md),
# DEMO_JSON=FILE (the results as JSON, for bench/demo_runs.sh), DEMO_QUEUES=0
# (no sampling of the switch's queues while the probe runs; by default their
# backlog is read every 50 ms and printed as the queueing delay inference met),
# LANES_BUILD_DIR (default ./build), DEMO_NO_BUILD=1, DEMO_DEBUG=1 (kernel and
# TCP counters of the inference path after the "with Lanes" phase),
# DEMO_CLOSED_LOOP=1 (then the closed loop of docs/signals.md,
# bench/closed_loop.sh, on a cluster of its own; charts and data are kept in
# /tmp/lanes-closed-loop.*).
#
# Two more scenarios of issue 21, each three phases (no load, without Lanes,
# with Lanes) after the three above, on the same cluster, printing the p99 with
# a bootstrap 95 % CI and its ratio to the scenario's no-load p99 (goal <= 1.5):
#   DEMO_PATHS=1    a path per class. The main switch ignores DSCP (one FIFO);
#                   a second, bulk fabric (bench/fabric.sh fabric_bulk_create:
#                   its own switch and a FIFO uplink of the same rate) reaches
#                   train1 and train2 on a NIC bulk0, and their routing table
#                   100 sends the far side there. With Lanes the training class
#                   has route_table = 100: its job's traffic to the far side
#                   leaves on the bulk fabric, the inference replies keep the
#                   main one.
#   DEMO_INGRESS=1  ingress caps on a co-located node. infer1's downlink (the
#                   switch's port toward it) becomes a FIFO at the fabric rate;
#                   a storage host streams a dataset into a training job on
#                   infer1 (iperf3 -R), beside the inference replica. With Lanes
#                   the training class has ingress_rate/ingress_ceil
#                   (DEMO_INGRESS_RATE, DEMO_INGRESS_CEIL; default 80Mbit and
#                   100Mbit, half the downlink) and may run on infer1.
#                   DEMO_INGRESS_BURST: the downlink's HTB bucket in bytes
#                   (default the fabric's, 4 frames; see docs/benchmark.md).
# The cluster's lanes.toml is rewritten for each (slurmctld reloads it, the
# nodes read it at each launch) and put back after.
#
# The inference probe (client and server, in every phase alike) runs SCHED_FIFO
# so that on a small shared machine the figures measure the network, not the
# CPU scheduler; training and forwarding run unprioritised (docs/benchmark.md).
set -uo pipefail
export TZ=UTC
src=$(cd "$(dirname "$0")/.." && pwd)
build=${LANES_BUILD_DIR:-$src/build}
seconds=${DEMO_SECONDS:-12}
rate=${DEMO_RATE:-200}
connections=${DEMO_CONNECTIONS:-16}
cc=${DEMO_CC:-cubic}
t_start=$(date +%s)

step() { printf '\n\033[1m== %s\033[0m  (%ds)\n' "$*" "$(($(date +%s) - t_start))"; }
say() { printf '   %s\n' "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }
((EUID == 0)) || die "run as root (it starts Slurm daemons and network namespaces)"

step "Installing dependencies and building Lanes"
bash "$src/contrib/install-deps.sh" || die "installing dependencies failed"
if [[ -z ${DEMO_NO_BUILD:-} ]]; then
    (cd "$src" && autoreconf -fi >/dev/null 2>&1) || die "autoreconf failed"
    mkdir -p "$build"
    (cd "$build" && { [[ -f Makefile ]] || "$src/configure" -q; } &&
        make -j"$(nproc)" >make.log 2>&1) || die "build failed: see $build/make.log"
fi
for f in job_submit/.libs/job_submit_lanes.so spank/.libs/spank_lanes.so lanesctl/lanesctl bench/inference_probe; do
    [[ -e $build/$f ]] || die "$build/$f is missing"
done
say "built in $build"

export LANES_SRCDIR=$src LANES_BUILDDIR=$build
source "$src/bench/fabric.sh"
source "$src/bench/lanes_cluster.sh"
lanesctl=$build/lanesctl/lanesctl
probe=$build/bench/inference_probe
rt=()
[[ ${DEMO_RT:-1} != 0 ]] && chrt -f 50 true 2>/dev/null && rt=(chrt -f 50)
conf_src=$(mktemp -d)

teardown() {
    local rc=$?
    trap - EXIT INT TERM
    printf '\n== Tearing down\n'
    fabric_destroy
    lanes_cluster_stop "$rc"
    rm -rf "$conf_src"
    say "cluster, fabric, namespaces and Lanes state removed"
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "Starting the fabric and a real Slurm cluster with both Lanes plugins"
FABRIC_HOSTS="" FABRIC_RATE=${DEMO_FABRIC_RATE:-200mbit} FABRIC_MTU=${DEMO_FABRIC_MTU:-9000} fabric_create >/dev/null || die "fabric failed"
fabric_qos dscp >/dev/null || die "fabric QoS failed"
lanes_cluster_start "demo$$" "${DEMO_TRAIN_RATE:-80Mbit}" "${DEMO_TRAIN_CEIL:-94Mbit}" ||
    die "cluster did not start, or cannot attach it to the fabric"
far=$(fabric_ip far)
infer=$(fabric_ip infer1)
say "slurmctld + slurmd train1 train2 infer1 up in ${CLUSTER_START_SECONDS}s; fabric uplink $FABRIC__RATE, MTU $FABRIC__MTU, switch trusts DSCP"
say "lanes.toml: $CLUSTER_CONF_DIR/lanes.toml   policy: $CLUSTER_CONF_DIR/lanes.lua (policies/default.lua)"

step "Checking the configuration and dry-running the policy (lanesctl)"
"$lanesctl" check --config "$CLUSTER_CONF_DIR/lanes.toml" | sed 's/^/   /'
cat >"$conf_src/train.json" <<'JSON'
{"name": "train-llama", "user": "alice", "partition": "", "time_limit": 600, "batch": true, "lanes_class": "training"}
JSON
peak_at=$(date -u -d "@$(($(date +%s) + 200 * 60))" '+%Y-%m-%d %H:%M')
say "a 10-hour training job submitted now, and in the peak window ($peak_at UTC):"
"$lanesctl" policy test --config "$CLUSTER_CONF_DIR/lanes.toml" "$conf_src/train.json" 2>&1 |
    grep -E '^  (class|partition|begin time|time limit|rate/ceil|dscp|messages|why):' | sed 's/^ */     now:  /'
"$lanesctl" policy test --config "$CLUSTER_CONF_DIR/lanes.toml" --at "$peak_at UTC" "$conf_src/train.json" 2>&1 |
    grep -E '^  (begin time|time limit|messages|why):' | sed 's/^ */     peak: /'

# Far side: training peers' ends (iperf3 servers), the inference clients.
for port in 5201 5202 5211 5212; do
    fabric_spawn far "$CLUSTER_WORK_DIR/iperf-$port.log" iperf3 -s -p "$port" >/dev/null
done
sleep 0.3

# measure PORT LABEL -> inference_probe JSON in $CLUSTER_WORK_DIR/LABEL.json
# (+ .samples), and the switch's queues while the probe ran (LABEL.queues, with
# the probe's start and end times in LABEL.window) unless DEMO_QUEUES=0.
measure() {
    local sampler=""
    if [[ ${DEMO_QUEUES:-1} != 0 ]]; then
        fabric_queue_sample "$CLUSTER_WORK_DIR/$2.queues" $((seconds + 20)) 0.05 &
        sampler=$!
    fi
    local t0=$EPOCHREALTIME
    fabric_exec far timeout $((seconds + 10)) "${rt[@]}" "$probe" load --connect "$infer:$1" --rate "$rate" \
        --duration "$seconds" --connections "$connections" --congestion "$cc" --json \
        --samples "$CLUSTER_WORK_DIR/$2.samples" >"$CLUSTER_WORK_DIR/$2.json" 2>"$CLUSTER_WORK_DIR/$2.err"
    local rc=$?
    echo "$t0 $EPOCHREALTIME" >"$CLUSTER_WORK_DIR/$2.window"
    if [[ -n $sampler ]]; then
        kill "$sampler" 2>/dev/null
        wait "$sampler" 2>/dev/null
    fi
    return "$rc"
}
training_mbit() {  # sum of the received rate in the iperf3 JSON files given
    python3 - "$@" <<'PY'
import json, sys
total = 0.0
for path in sys.argv[1:]:
    try:
        total += json.load(open(path))["end"]["sum_received"]["bits_per_second"]
    except Exception:
        pass
print(f"{total / 1e6:.1f}")
PY
}

step "Phase 1: no load (inference alone)"
# Without Lanes: an inference server started by hand on infer1, not through Slurm.
fabric_spawn infer1 "$CLUSTER_WORK_DIR/plain-server.log" "${rt[@]}" "$probe" serve --listen "$infer:7001" \
    --congestion "$cc" >/dev/null
sleep 0.3
measure 7001 floor
say "done"

step "Phase 2: training without Lanes (the same load, started by hand, unmarked and uncapped)"
fabric_qos dscp >/dev/null  # fresh counters on the switch's uplink classes
clients=()
for node in train1 train2; do
    port=$([[ $node == train1 ]] && echo 5201 || echo 5202)
    fabric_exec "$node" timeout $((seconds + 10)) iperf3 -c "$far" -p "$port" -P 4 -C "$cc" -t $((seconds + 4)) -J \
        >"$CLUSTER_WORK_DIR/plain-$node.json" 2>/dev/null &
    clients+=($!)
done
sleep 1
measure 7001 nolanes
wait "${clients[@]}"
fabric_uplink_stats sw >"$CLUSTER_WORK_DIR/uplink-nolanes.txt"
say "done"

step "Phase 3: training with Lanes (both jobs submitted through Slurm)"
cat >"$CLUSTER_WORK_DIR/serve.sh" <<SH
#!/bin/sh
exec ${rt[*]} "$probe" serve --listen "$infer:7000" --congestion "$cc"
SH
cat >"$CLUSTER_WORK_DIR/train.sh" <<SH
#!/bin/bash
# Gradient sync stand-in: 4 bulk TCP streams from each training node to the far side.
srun --ntasks-per-node=1 bash -c 'iperf3 -c $far -p \$((5211 + SLURM_PROCID)) -P 4 -C $cc -t $((seconds + 5)) -J >"$CLUSTER_WORK_DIR/lanes-\$SLURMD_NODENAME.json" 2>/dev/null'
SH
chmod 755 "$CLUSTER_WORK_DIR/serve.sh" "$CLUSTER_WORK_DIR/train.sh"
fabric_qos dscp >/dev/null
serve_out=$(cd "$CLUSTER_WORK_DIR" && cluster_run_ctl sbatch -J serve-llm -o /dev/null "$CLUSTER_WORK_DIR/serve.sh" 2>&1)
serve_id=$(grep -oE '[0-9]+$' <<<"$serve_out" | tail -1)
train_out=$(cd "$CLUSTER_WORK_DIR" && cluster_run_ctl sbatch -J train-llama -N2 --lanes-class=training -t 30 \
    -o "$CLUSTER_WORK_DIR/train-%j.out" "$CLUSTER_WORK_DIR/train.sh" 2>&1)
train_id=$(grep -oE '[0-9]+$' <<<"$train_out" | tail -1)
[[ -n $serve_id && -n $train_id ]] || die "submission failed: $serve_out / $train_out"
say "sbatch -J serve-llm serve.sh          -> job $serve_id  class $(cluster_run_ctl scontrol show job "$serve_id" | grep -oE 'Partition=[^ ]+')"
say "sbatch -J train-llama -N2 --lanes-class=training train.sh -> job $train_id  $(cluster_run_ctl scontrol show job "$train_id" | grep -oE 'Partition=[^ ]+')"
cluster_wait_job "$serve_id" RUNNING 30 >/dev/null || die "inference service did not start"
cluster_wait_job "$train_id" RUNNING 30 >/dev/null || die "training did not start"
# Measure under the full load: both nodes' 4 streams (and iperf3's control
# connections) established, then a second for TCP to ramp up.
for _ in $(seq 150); do
    (($(fabric_exec far ss -Htn state established '( sport = :5211 or sport = :5212 )' | wc -l) >= 10)) && break
    sleep 0.1
done
sleep 1
say "on train1, what spank_lanes applied (lanesctl status):"
cluster_run_node train1 env SLURMD_NODENAME=train1 "$lanesctl" status --config "$CLUSTER_CONF_DIR/lanes.toml" --node train1 2>&1 | sed 's/^/     /'
say "tc class, nft elements and burst bound for the job on train1:"
cluster_run_node train1 tc class show dev fab0 | grep -E "1a4e:[0-9a-f]+ parent 1a4e:1 " | grep -v fffe | sed 's/^/     /'
cluster_run_node train1 nft list table inet lanes 2>/dev/null | grep -oE "[^ {,]*job_$train_id\"? : [0-9a-f:]+|@dscp_[0-9]+ ip dscp set [a-z0-9]+" |
    sort -u | sed 's/^/     nft: /'
gso=$(cluster_run_node train1 ip -d link show dev fab0 | grep -oE 'gso_max_size [0-9]+' | head -1)
echo "     fab0 ${gso:-gso_max_size ?} (node.gso_burst; Linux's default is 65536)"
echo "${gso##* }" >"$CLUSTER_WORK_DIR/gso-train1.txt"
[[ -n ${DEMO_DEBUG:-} ]] && for n in infer1 far train1; do fabric_exec "$n" nstat -n; done
measure 7000 lanes
if [[ -n ${DEMO_DEBUG:-} ]]; then
    for n in infer1 far train1; do
        echo "== TCP counters in $n"
        fabric_exec "$n" nstat | grep -iE 'retrans|loss|TCPTimeouts|Probe|drop|ofo|Reorder'
    done
    echo "== infer1 fab0"; fabric_exec infer1 tc -s qdisc show dev fab0
    echo "== infer1 class"; fabric_exec infer1 tc -s class show dev fab0
    echo "== train1 fab0"; fabric_exec train1 tc -s qdisc show dev fab0
    echo "== sw up0"; fabric_exec sw tc -s qdisc show dev up0
    echo "== far up0"; fabric_exec far tc -s qdisc show dev up0
    cat "$CLUSTER_WORK_DIR/lanes.json"
fi
cluster_wait_job "$train_id" COMPLETED $((seconds + 30)) >/dev/null
fabric_uplink_stats sw >"$CLUSTER_WORK_DIR/uplink-lanes.txt"
cluster_run_ctl scancel "$serve_id"
say "done"

# --- Issue 21's scenarios (DEMO_PATHS=1, DEMO_INGRESS=1) ---
cp "$CLUSTER_CONF_DIR/lanes.toml" "$conf_src/lanes.base.toml"
# lanes_toml base|paths|ingress: the cluster's lanes.toml for a scenario (the
# demo's, plus the scenario's keys), once slurmctld logged that it took it.
lanes_toml() {
    local conf=$CLUSTER_CONF_DIR/lanes.toml log before
    log=$(cluster_log slurmctld) || return 1
    before=$(grep -c 'lanes: reloaded' "$log")
    sleep 1.1  # a new mtime second for slurmctld's once-a-second reloader
    cp "$conf_src/lanes.base.toml" "$conf.new" || return 1
    case $1 in
        paths)
            sed -i '/^\[classes.training\]$/,/^\[/ s/^rdma_service_level = 1$/&\nroute_table = 100                  # issue 21: its own path (the bulk fabric)/' "$conf.new"
            printf '\n# The bulk fabric: a second NIC on the training nodes, shaped too.\n[[nodes.nic]]\nnodes = "train[1-2]"\ndevice = "bulk0"\nlink_speed = "1Gbit"\n' >>"$conf.new"
            ;;
        ingress)
            sed -i -e '/^\[classes.training\]$/,/^\[/ s/^partitions = .*$/partitions = ["inference", "training"]   # issue 21: co-located on infer1/' \
                -e "/^\\[classes.training\\]\$/,/^\\[/ s/^rdma_service_level = 1\$/&\\ningress_rate = \"${DEMO_INGRESS_RATE:-80Mbit}\"\\ningress_ceil = \"${DEMO_INGRESS_CEIL:-100Mbit}\"/" \
                "$conf.new"
            ;;
    esac
    mv "$conf.new" "$conf" || return 1
    for _ in $(seq 150); do
        (($(grep -c 'lanes: reloaded' "$log") > before)) && return 0
        sleep 0.1
    done
    echo "demo: slurmctld did not reload lanes.toml for '$1'" >&2
    return 1
}
# scenario_results NAME TITLE: the scenario's table (p99 with a bootstrap 95 %
# CI, ratio to no load with its CI) from NAME-floor/-nolanes/-lanes samples, and
# $CLUSTER_WORK_DIR/scenario-NAME.json with it all for DEMO_JSON.
scenario_results() {
    PYTHONPATH=$src/bench python3 - "$CLUSTER_WORK_DIR" "$1" "$2" "${3:-}" "${4:-}" <<'PY'
import json, sys
from latency_ci import bootstrap_p99, interval95, p99, ratio_interval95, read_samples
work, name, title, train_plain, train_lanes = sys.argv[1:6]
def load(label):
    try:
        return json.load(open(f"{work}/{name}-{label}.json"))
    except Exception:
        return None
def samples(label):
    return read_samples(f"{work}/{name}-{label}.samples")
def ci(b):
    lo, hi = interval95(b)
    return [lo, hi] if lo == lo else None
out = {"title": title}
base = samples("floor")
base_b = bootstrap_p99(base)
print(f"   {title}")
print(f"   {'phase':<24} {'p50 ms':>8} {'p99 ms (95 % CI)':>24} {'lost':>5} {'p99 / no load (95 % CI)':>26}")
for label, shown in (("floor", "no load"), ("nolanes", "training without Lanes"), ("lanes", "training with Lanes")):
    r, v = load(label), samples(label)
    out[label] = r
    if not r or not v:
        print(f"   {shown:<24} {'(no result)':>33}")
        continue
    b = bootstrap_p99(v) if label != "floor" else base_b
    lo_hi = ci(b)
    out[label + "_p99"], out[label + "_p99_ci"] = p99(v), lo_hi
    lost = r.get("errors", 0) + r.get("timeouts", 0)
    ratio = ""
    if label != "floor" and base:
        q = p99(v) / p99(base)
        rci = list(ratio_interval95(b, base_b))
        out[label + "_ratio"], out[label + "_ratio_ci"] = q, rci
        ratio = f"x{q:.2f} ({rci[0]:.2f}-{rci[1]:.2f})"
    shown_p99 = f"{p99(v):.2f} ({lo_hi[0]:.2f}-{lo_hi[1]:.2f})"
    print(f"   {shown:<24} {r['p50_ms']:>8.2f} {shown_p99:>24} {lost:>5} {ratio:>26}")
def mbit(path_glob):
    import glob
    t = 0.0
    for p in glob.glob(f"{work}/{path_glob}"):
        try:
            t += json.load(open(p))["end"]["sum_received"]["bits_per_second"]
        except Exception:
            pass
    return round(t / 1e6, 1)
out["train_mbit_nolanes"], out["train_mbit_lanes"] = mbit(train_plain), mbit(train_lanes)
print(f"   training (what it received, Mbit/s): without Lanes {out['train_mbit_nolanes']}, with Lanes {out['train_mbit_lanes']}")
if out.get("lanes_ratio") is not None:
    print(f"   inference p99 vs no load: without Lanes x{out.get('nolanes_ratio', float('nan')):.1f}, "
          f"with Lanes x{out['lanes_ratio']:.2f}  (goal <= 1.5)")
json.dump(out, open(f"{work}/scenario-{name}.json", "w"), indent=1)
PY
}
# train_script FILE TAG CMD: a batch script whose srun task (one per node) runs
# CMD with its iperf3 JSON in $CLUSTER_WORK_DIR/TAG-<node>.json.
train_script() {
    cat >"$1" <<SH
#!/bin/bash
srun --ntasks-per-node=1 bash -c '$3 >"$CLUSTER_WORK_DIR/$2-\$SLURMD_NODENAME.json" 2>/dev/null'
SH
    chmod 755 "$1"
}
serve_script() {  # serve_script FILE PORT
    printf '#!/bin/sh\nexec %s "%s" serve --listen "%s:%s" --congestion "%s"\n' "${rt[*]}" "$probe" "$infer" "$2" "$cc" >"$1"
    chmod 755 "$1"
}
submit() {  # submit ARGS...: sbatch from the ctl namespace, the job id on stdout
    local out
    out=$(cd "$CLUSTER_WORK_DIR" && cluster_run_ctl sbatch "$@" 2>&1)
    grep -oE '[0-9]+$' <<<"$out" | tail -1 | grep . || { echo "demo: sbatch $*: $out" >&2; return 1; }
}
wait_streams() {  # wait_streams NODE N FILTER: until NODE has N established TCP connections matching FILTER
    for _ in $(seq 150); do
        (($(fabric_exec "$1" ss -Htn state established "$3" | wc -l) >= $2)) && break
        sleep 0.1
    done
    sleep 1
}

if [[ -n ${DEMO_PATHS:-} ]]; then
    step "Paths per class (DEMO_PATHS=1): the switch ignores DSCP; a bulk fabric beside it"
    fabric_bulk_create train1 train2 || die "the bulk fabric failed"
    fabric_qos none >/dev/null || die "fabric QoS failed"
    # The admin's routing table 100 on the training nodes: the far side (the
    # training peers) over the bulk fabric. Nothing else is in it, so the rest of
    # a marked job's traffic (its srun talking to slurmctld) falls through to
    # the main table (as with egress_device = "bulk0" and egress_prefixes for
    # the far side).
    for node in train1 train2; do
        cluster_run_node "$node" ip route add "$far/32" dev bulk0 src "$(fabric_bulk_ip "$node")" table 100 &&
            cluster_run_node "$node" ip -6 route add "$(fabric_ip6 far)/128" dev bulk0 table 100 ||
            die "routing table 100 on $node"
    done
    lanes_toml paths || die "lanes.toml for paths"
    say "main uplink $FABRIC__RATE, one FIFO (DSCP ignored); bulk uplink $FABRIC__RATE, one FIFO; train1/train2 have bulk0 ($(fabric_bulk_ip train1), $(fabric_bulk_ip train2))"
    say "train1/train2: table 100 routes the far side ($far) via bulk0"
    say "lanes.toml: [classes.training] route_table = 100; [[nodes.nic]] nodes = \"train[1-2]\" device = \"bulk0\""

    step "Paths, phase 1: no load"
    measure 7001 paths-floor
    say "done"

    step "Paths, phase 2: training without Lanes (by hand, on the default route: the main fabric)"
    fabric_qos none >/dev/null
    fabric_bulk_qos
    clients=()
    for node in train1 train2; do
        port=$([[ $node == train1 ]] && echo 5201 || echo 5202)
        fabric_exec "$node" timeout $((seconds + 10)) iperf3 -c "$far" -p "$port" -P 4 -C "$cc" -t $((seconds + 4)) -J \
            >"$CLUSTER_WORK_DIR/paths-plain-$node.json" 2>/dev/null &
        clients+=($!)
    done
    sleep 1
    measure 7001 paths-nolanes
    wait "${clients[@]}"
    fabric_uplink_stats sw >"$CLUSTER_WORK_DIR/uplink-paths-nolanes.txt"
    fabric_bulk_stats >"$CLUSTER_WORK_DIR/bulk-paths-nolanes.txt"
    say "done"

    step "Paths, phase 3: training with Lanes on its own path (both jobs through Slurm)"
    fabric_qos none >/dev/null
    fabric_bulk_qos
    serve_script "$CLUSTER_WORK_DIR/serve-paths.sh" 7002
    train_script "$CLUSTER_WORK_DIR/train-paths.sh" paths-lanes "iperf3 -c $far -p \$((5211 + SLURM_PROCID)) -P 4 -C $cc -t $((seconds + 5)) -J"
    serve_id=$(submit -J serve-llm -o /dev/null "$CLUSTER_WORK_DIR/serve-paths.sh") &&
        train_id=$(submit -J train-llama -N2 --lanes-class=training -t 30 -o "$CLUSTER_WORK_DIR/train-%j.out" \
            "$CLUSTER_WORK_DIR/train-paths.sh") || die "submission failed"
    say "sbatch -J serve-llm serve.sh -> job $serve_id; sbatch -J train-llama -N2 --lanes-class=training train.sh -> job $train_id"
    cluster_wait_job "$serve_id" RUNNING 30 >/dev/null || die "inference service did not start"
    cluster_wait_job "$train_id" RUNNING 30 >/dev/null || die "training did not start"
    wait_streams far 10 '( sport = :5211 or sport = :5212 )'
    say "on train1 (lanesctl status, ip rule):"
    cluster_run_node train1 env SLURMD_NODENAME=train1 "$lanesctl" status --config "$CLUSTER_CONF_DIR/lanes.toml" --node train1 2>&1 |
        grep -E '^path:' | sed 's/^/     /'
    cluster_run_node train1 ip rule show pref 14000 | sed 's/^/     /'
    measure 7002 paths-lanes
    cluster_wait_job "$train_id" COMPLETED $((seconds + 30)) >/dev/null
    fabric_uplink_stats sw >"$CLUSTER_WORK_DIR/uplink-paths-lanes.txt"
    fabric_bulk_stats >"$CLUSTER_WORK_DIR/bulk-paths-lanes.txt"
    cluster_run_ctl scancel "$serve_id"
    cluster_wait_job "$serve_id" CANCELLED 30 >/dev/null
    for phase in nolanes lanes; do
        say "bytes toward the far side, training $([[ $phase == lanes ]] && echo with || echo without) Lanes: main uplink $(awk '{s += $2} END {print s + 0}' "$CLUSTER_WORK_DIR/uplink-paths-$phase.txt"), bulk uplink $(awk '{s += $2} END {print s + 0}' "$CLUSTER_WORK_DIR/bulk-paths-$phase.txt")"
    done
    step "Paths per class: results (inference: $rate req/s open-loop; training: 2 nodes x 4 TCP streams)"
    scenario_results paths "a switch that ignores DSCP, training on a bulk fabric of its own" \
        "paths-plain-train*.json" "paths-lanes-train*.json"
    python3 - "$CLUSTER_WORK_DIR" <<'PY'
import json, sys
work = sys.argv[1]
def total(p):
    try:
        return sum(int(l.split()[1]) for l in open(p))
    except Exception:
        return 0
j = json.load(open(f"{work}/scenario-paths.json"))
for ph in ("nolanes", "lanes"):
    j[f"main_uplink_bytes_{ph}"] = total(f"{work}/uplink-paths-{ph}.txt")
    j[f"bulk_uplink_bytes_{ph}"] = total(f"{work}/bulk-paths-{ph}.txt")
json.dump(j, open(f"{work}/scenario-paths.json", "w"), indent=1)
PY
    lanes_toml base || die "lanes.toml back"
    fabric_qos dscp >/dev/null
fi

if [[ -n ${DEMO_INGRESS:-} ]]; then
    step "Ingress caps (DEMO_INGRESS=1): a dataset stream into a training job beside the inference replica"
    fabric_add_host storage host 20 >/dev/null || die "the storage host failed"
    storage=$(fabric_ip storage)
    fabric_port_cap infer1 "$FABRIC__RATE" ${DEMO_INGRESS_BURST:+"$DEMO_INGRESS_BURST"} || die "infer1's downlink"
    fabric_spawn storage "$CLUSTER_WORK_DIR/iperf-storage.log" iperf3 -s -p 5301 >/dev/null
    lanes_toml ingress || die "lanes.toml for ingress"
    say "storage $storage streams to infer1 over infer1's downlink: $FABRIC__RATE, one FIFO, bucket ${DEMO_INGRESS_BURST:-$FABRIC__BURST} bytes"
    say "lanes.toml: [classes.training] ingress_rate = \"${DEMO_INGRESS_RATE:-80Mbit}\" ingress_ceil = \"${DEMO_INGRESS_CEIL:-100Mbit}\", partitions += inference"

    step "Ingress, phase 1: no load"
    measure 7001 ingress-floor
    say "done"

    step "Ingress, phase 2: the dataset stream without Lanes (iperf3 -R on infer1, by hand)"
    fabric_exec infer1 timeout $((seconds + 10)) iperf3 -c "$storage" -p 5301 -R -C "$cc" -t $((seconds + 4)) -J \
        >"$CLUSTER_WORK_DIR/ingress-plain-infer1.json" 2>/dev/null &
    client=$!
    wait_streams storage 2 '( sport = :5301 )'
    measure 7001 ingress-nolanes
    wait "$client"
    say "done"

    step "Ingress, phase 3: the stream into a training job with an ingress cap (both jobs through Slurm)"
    serve_script "$CLUSTER_WORK_DIR/serve-ingress.sh" 7003
    train_script "$CLUSTER_WORK_DIR/train-ingress.sh" ingress-lanes "iperf3 -c $storage -p 5301 -R -C $cc -t $((seconds + 5)) -J"
    serve_id=$(submit -J serve-llm -o /dev/null "$CLUSTER_WORK_DIR/serve-ingress.sh") &&
        train_id=$(submit -J train-data -w infer1 --lanes-class=training -t 30 -o "$CLUSTER_WORK_DIR/train-%j.out" \
            "$CLUSTER_WORK_DIR/train-ingress.sh") || die "submission failed"
    say "sbatch -J serve-llm serve.sh -> job $serve_id; sbatch -J train-data -w infer1 --lanes-class=training train.sh -> job $train_id"
    cluster_wait_job "$serve_id" RUNNING 30 >/dev/null || die "inference service did not start"
    cluster_wait_job "$train_id" RUNNING 30 >/dev/null || die "training did not start"
    wait_streams storage 2 '( sport = :5301 )'
    ifb=$(cluster_run_node infer1 ip -o link show | grep -o 'lanes-ifb[0-9a-f]\{6\}' | head -1)
    say "on infer1, the job's class on ${ifb:-(no IFB)} (tc class show):"
    [[ -n $ifb ]] && cluster_run_node infer1 tc class show dev "$ifb" | grep -E 'parent 1a4e:1 ' | grep -v fffe | sed 's/^/     /'
    measure 7003 ingress-lanes
    [[ -n $ifb ]] && cluster_run_node infer1 tc -s class show dev "$ifb" >"$CLUSTER_WORK_DIR/ifb-ingress.txt"
    cluster_wait_job "$train_id" COMPLETED $((seconds + 30)) >/dev/null
    cluster_run_ctl scancel "$serve_id"
    cluster_wait_job "$serve_id" CANCELLED 30 >/dev/null
    step "Ingress caps: results (inference: $rate req/s open-loop; dataset stream: 1 TCP stream into infer1)"
    scenario_results ingress "a dataset stream into a training job on the inference replica's node (ingress_ceil ${DEMO_INGRESS_CEIL:-100Mbit}, downlink bucket ${DEMO_INGRESS_BURST:-$FABRIC__BURST} bytes)" \
        "ingress-plain-infer1.json" "ingress-lanes-infer1.json"
    fabric_port_cap infer1 off
    lanes_toml base || die "lanes.toml back"
fi

step "Results (inference: $rate req/s open-loop, 1 KB replies; training: 2 nodes x 4 TCP streams)"
PYTHONPATH=$src/bench python3 - "$CLUSTER_WORK_DIR" "$seconds" "$(fabric__tc_rate_bits "$FABRIC__RATE")" "$FABRIC__MTU" "$(training_mbit "$CLUSTER_WORK_DIR"/plain-train1.json "$CLUSTER_WORK_DIR"/plain-train2.json)" \
    "$(training_mbit "$CLUSTER_WORK_DIR"/lanes-train1.json "$CLUSTER_WORK_DIR"/lanes-train2.json)" \
    "${DEMO_JSON:-}" <<'PY'
import json, sys
work, seconds, link_bits, mtu = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
plain_mbit, lanes_mbit, json_out = sys.argv[5], sys.argv[6], sys.argv[7]
def load(name):
    try:
        return json.load(open(f"{work}/{name}.json"))
    except Exception as e:
        return None
rows = [("no load", load("floor"), "-"), ("training without Lanes", load("nolanes"), plain_mbit),
        ("training with Lanes", load("lanes"), lanes_mbit)]
print(f"   {'scenario':<24} {'p50 ms':>8} {'p99 ms':>8} {'p99.9 ms':>9} {'lost':>5} {'training Mbit/s':>16}")
for name, r, mbit in rows:
    if not r:
        print(f"   {name:<24} {'(no result)':>33}")
        continue
    lost = r.get("errors", 0) + r.get("timeouts", 0)
    print(f"   {name:<24} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['p999_ms']:>9.2f} {lost:>5} {mbit:>16}")
floor, without, with_ = rows[0][1], rows[1][1], rows[2][1]
# What the switch saw: bytes per uplink class toward the far side (1:10 priority
# for AF4x/EF, 1:20 best effort, 1:30 scavenger for CS1/LE), and the training
# payload that arrived.
def uplink(name):
    c = {}
    try:
        for line in open(f"{work}/uplink-{name}.txt"):
            f = line.split()
            c[f[0]] = int(f[1])
    except Exception:
        pass
    return c
def received(*names):
    total = 0
    for n in names:
        try:
            total += json.load(open(f"{work}/{n}.json"))["end"]["sum_received"]["bytes"]
        except Exception:
            pass
    return total
print(f"\n   {'switch uplink, bytes':<24} {'priority':>12} {'best effort':>12} {'scavenger':>12} {'training got':>13}")
for name, label, got in (("nolanes", "training without Lanes", received("plain-train1", "plain-train2")),
                         ("lanes", "training with Lanes", received("lanes-train1", "lanes-train2"))):
    c = uplink(name)
    print(f"   {label:<24} {c.get('1:10', 0):>12} {c.get('1:20', 0):>12} {c.get('1:30', 0):>12} {got:>13}")
# The p99s with a bootstrap 95 % CI (resampling each phase's latencies).
from latency_ci import bootstrap_p99, interval95, p99, ratio_interval95, read_samples
def ci(lo_hi):
    return list(lo_hi) if lo_hi[0] == lo_hi[0] else None
lat = {label: read_samples(f"{work}/{label}.samples") for label in ("floor", "nolanes", "lanes")}
boots = {label: bootstrap_p99(v) for label, v in lat.items()}
p99_ci = {label: ci(interval95(b)) for label, b in boots.items()}
ratio_ci = {label: ci(ratio_interval95(boots[label], boots["floor"]))
            for label in ("nolanes", "lanes") if boots[label] and boots["floor"]}
# The queueing delay inference met in the switch while the probe ran: its
# class's backlog (and any class served before it) over the uplink rate, at
# the uplink's two ends. Replies leave the switch (sw/up0) in best effort
# (class 20) unmarked, in priority (10) as AF41 with Lanes; the far side's
# requests are unmarked (20) in every phase.
def queue_delay(label, end, cls):
    try:
        t0, t1 = (float(x) for x in open(f"{work}/{label}.window").read().split()[:2])
        rows = [l.split() for l in open(f"{work}/{label}.queues")]
    except Exception:
        return None
    d = []
    for f in rows:
        if len(f) < 5 or f[1] != end:
            continue
        try:
            t, b10, b20 = float(f[0]), int(f[2]), int(f[3])
        except ValueError:
            continue
        if t0 <= t <= t1:
            d.append((b10 if cls == 10 else b10 + b20) * 8 / link_bits * 1000)
    if not d:
        return None
    return {"end": end, "class": cls, "mean_ms": sum(d) / len(d), "p99_ms": p99(d), "max_ms": max(d), "samples": len(d), "interval_ms": 1000 * (t1 - t0) / max(1, len(d))}
queues = {}
for label, cls in (("floor", 20), ("nolanes", 20), ("lanes", 10)):
    queues[label] = {"replies": queue_delay(label, "sw/up0", cls), "requests": queue_delay(label, "far/up0", 20)}
print(f"\n   {'inference p99, 95 % CI':<24} {'p99 ms (CI)':>22} {'p99 / no load (CI)':>22}")
for name, label in (("no load", "floor"), ("training without Lanes", "nolanes"), ("training with Lanes", "lanes")):
    c, r, v = p99_ci.get(label), ratio_ci.get(label), lat[label]
    if not v or not c:
        continue
    rs = f"x{p99(v) / p99(lat['floor']):.2f} ({r[0]:.2f}-{r[1]:.2f})" if r else "-"
    print(f"   {name:<24} {f'{p99(v):.2f} ({c[0]:.2f}-{c[1]:.2f})':>22} {rs:>22}")
if any(q["replies"] for q in queues.values()):
    print(f"\n   {'switch queueing delay':<24} {'replies: class':>15} {'mean ms':>8} {'p99 ms':>8} {'max ms':>8}"
          f" {'requests: mean':>15} {'max ms':>8} {'samples':>8}")
    for name, label in (("no load", "floor"), ("training without Lanes", "nolanes"), ("training with Lanes", "lanes")):
        rq, qq = queues[label]["replies"], queues[label]["requests"]
        if not rq:
            continue
        cls = "priority" if rq["class"] == 10 else "best effort"
        print(f"   {name:<24} {cls:>15} {rq['mean_ms']:>8.3f} {rq['p99_ms']:>8.3f} {rq['max_ms']:>8.3f}"
              f" {qq['mean_ms'] if qq else float('nan'):>15.3f} {qq['max_ms'] if qq else float('nan'):>8.3f} {rq['samples']:>8}")
    print("   (the backlog ahead of inference in its class and any served before it, over the uplink rate,"
          " read every ~%.0f ms while the probe ran)" % max(q["replies"]["interval_ms"] for q in queues.values() if q["replies"]))
if floor and without and with_:
    print(f"\n   inference p99 vs no load: without Lanes x{without['p99_ms'] / floor['p99_ms']:.1f}, "
          f"with Lanes x{with_['p99_ms'] / floor['p99_ms']:.2f}  (goal <= 1.5)")
# What training could have had with Lanes: the link minus inference's bytes on
# the wire (the priority class), as TCP goodput (MTU - 52 of every MTU + 14
# bytes: IP and TCP headers with timestamps, Ethernet header).
inference_mbit = uplink("lanes").get("1:10", 0) * 8 / seconds / 1e6
leftover = (link_bits / 1e6 - inference_mbit) * (mtu - 52) / (mtu + 14)
try:
    print(f"   training with Lanes / capacity inference leaves: {100 * float(lanes_mbit) / leftover:.1f} %  "
          f"({lanes_mbit} of {leftover:.1f} Mbit/s; goal >= 90 %)")
except ValueError:
    pass
def gso_train1():  # what spank_lanes' burst bound left on train1's fab0 during the run
    try:
        return int(open(f"{work}/gso-train1.txt").read())
    except Exception:
        return None
def scenarios():  # issue 21's scenarios that ran (DEMO_PATHS, DEMO_INGRESS)
    got = {}
    for name in ("paths", "ingress"):
        try:
            got[name] = json.load(open(f"{work}/scenario-{name}.json"))
        except Exception:
            pass
    return got
for name, s in scenarios().items():
    if s.get("lanes_ratio") is not None:
        print(f"   {s['title']}: p99 with Lanes / no load x{s['lanes_ratio']:.2f} "
              f"(95 % CI {s['lanes_ratio_ci'][0]:.2f}-{s['lanes_ratio_ci'][1]:.2f}), without Lanes "
              f"x{s.get('nolanes_ratio', float('nan')):.1f}  (goal <= 1.5)")
if json_out:
    num = lambda v: float(v) if v not in ("", "-") else None
    json.dump({"seconds": seconds, "link_mbit": link_bits / 1e6, "mtu": mtu, "floor": floor, "nolanes": without,
               "lanes": with_, "train_mbit_nolanes": num(plain_mbit), "train_mbit_lanes": num(lanes_mbit),
               "leftover_mbit": leftover, "uplink_nolanes": uplink("nolanes"), "uplink_lanes": uplink("lanes"),
               "gso_max_size_train1": gso_train1(), "p99_ci": p99_ci, "ratio_ci": ratio_ci, "queues": queues,
               **scenarios()},
              open(json_out, "w"), indent=1)
PY
say "total demo time: $(($(date +%s) - t_start)) s"

if [[ -n ${DEMO_CLOSED_LOOP:-} ]]; then
    step "Closed loop (DEMO_CLOSED_LOOP=1): bench/closed_loop.sh, on a cluster of its own"
    cl_dir=$(mktemp -d /tmp/lanes-closed-loop.XXXXXX)
    bash "$src/bench/closed_loop.sh" --plot "$cl_dir/closed-loop.png" --out "$cl_dir" 2>&1 |
        sed 's/^/   /'
    ((PIPESTATUS[0] == 0)) || die "the closed loop failed"
fi
