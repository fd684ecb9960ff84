#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The closed loop, shown on the demo's real cluster (bench/fabric.sh's shared
# 200 Mbit/s uplink, one FIFO: the switch does not trust DSCP, so only the
# nodes' caps protect inference): a training job through Slurm on train1 and
# train2 (ceil 94 Mbit/s each), an inference service through Slurm on infer1,
# its clients on the far side with `inference_probe load --metrics`, Debian's
# prometheus scraping them, and `lanes-agent` on both training nodes.
#
# CL_MODE=control (default): the agents run the ceil controller
# ([classes.training.control], lanes.toml(5)) on inference p99 (the SLO
# signal) and the request rate (the load signal): training's ceil moves
# between a floor and 94 Mbit/s: down by half when p99 breaks the SLO (or back
# to the ceil that held at that load), up by halving the gap between the ceil
# that held and the one that broke (at most CL_STEP) while p99 is under it
# with margin, no probe once that gap is CL_MIN_GAP or less.
# CL_MODE=busy: the two-level switch of before (busy_window/busy_ceil on a
# signal window: 2 while p99 misses the SLO, +1 while the load is high).
# CL_MODE=fixed: no controller: training at one fixed ceil per node
# (CL_FIXED, e.g. 56Mbit) for the whole run, as the sweep holds one: the rows
# a ceil under every knee still misses are this machine's, not the ceil's
# (docs/signals.md, "A fixed ceil under every knee").
#
# Phases (CL_PHASES, seconds): low load, high load, low again, a slow ramp from
# low to high in five steps, a spike (high for CL_SPIKE seconds, then low).
# CL_SCRAPE=1 (default) or 15: Prometheus' scrape interval; the signal's fetch
# interval, the query's range and the controller's dwell follow it (15 s: a 45 s
# range and a 90 s dwell, like a real deployment; the phases must then be
# minutes long). Per phase it prints: the controller's changes per node, SLO
# attainment per 10 s row (the share of requests under the SLO, from the
# probe's histogram) and the worst row judged (one that begins more than 5 s
# after the last change of the load and holds none: a phase's start, a step
# of the ramp, the spike's end; bench/closed_loop_score.py), training
# throughput; then, with CL_SWEEP (ceils, e.g.
# "94 75 56 38 25"), the best fixed ceil at the low and the high load (the
# highest whose every 10 s row meets 99 %, training at that ceil for
# CL_SWEEP_SECONDS each), and training's throughput in each phase against it;
# or CL_BEST=FILE: the best fixed ceils of an earlier run's CL_JSON (same loads),
# for runs without a sweep of their own. CL_JSON=FILE: the figures as JSON
# (bench/closed_loop_runs.sh reads them). Finally `lanesctl report` over the run.
#
#   bash bench/closed_loop.sh [--plot docs/closed-loop.png] [--out DIR]
#   (--plot also writes the report's chart next to it: docs/closed-loop-report.png)
# Settings: CL_MODE (control), CL_FIXED (fixed mode: the ceil, NMbit), CL_SLO_MS (10), CL_LOW_RATE (200 req/s),
# CL_HIGH_RATE (1500), CL_REPLY_BYTES (4096), CL_PHASES ("20 45 30 40 30"),
# CL_SPIKE (6), CL_SCRAPE (1), CL_FLOOR (10Mbit), CL_STEP (47Mbit), CL_MIN_GAP (24Mbit),
# CL_FULL_DECREASE_AT (4: a break at 4x the SLO or more halves the ceil, one
# nearer it cuts less; 1: every break halves it),
# CL_DWELL (7s; 90s with CL_SCRAPE=15), CL_BUSY_CEIL (25Mbit, busy mode),
# CL_SWEEP (""), CL_SWEEP_SECONDS (25), CL_BEST (""), CL_JSON (""), CL_CONGESTION
# (1: the controller's congestion_signal is the switch's queue, exported as
# lanes_bench_switch_queue_seconds, with congestion_above = SLO / 5; 0: none),
# CL_STRAIN ("": only the strain without margin; "2 6 0.92": with the
# congestion signal, strain_count, strain_window and strain_decrease, which at
# 1500 req/s counts a strain at 70-75 Mbit/s per node, where every row met:
# docs/signals.md),
# CL_REST_BELOW (0.1: the controller rests that fraction under the lowest ceil
# that broke or strained at a load, or under the class's ceil; 0: off),
# CL_QUIET (1: with the congestion signal and CL_REST_BELOW, quiet_below =
# SLO / 20, a quiet queue raises the ceil past where the search stopped; 0: off),
# CL_QUEUE_RANGE (the congestion signal's range; default the dwell less the
# interval, 6s, or 75s with CL_SCRAPE=15; the p99's range, 3s, sees 3 s of
# each 7 s dwell), CL_LOAD (offered: the load signal is the clients' offered
# rate; completed: the rate of their replies).
# Needs root and a built tree (LANES_BUILDDIR, ./build).
set -uo pipefail
export TZ=UTC
src=$(cd "$(dirname "$0")/.." && pwd)
export LANES_SRCDIR=${LANES_SRCDIR:-$src}
export LANES_BUILDDIR=${LANES_BUILDDIR:-$src/build}
plot="" out=""
while (($#)); do
    case $1 in
        --plot) plot=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "usage: bash bench/closed_loop.sh [--plot FILE.png] [--out DIR]" >&2; exit 2 ;;
    esac
done
((EUID == 0)) || { echo "closed_loop: run as root" >&2; exit 1; }
for t in prometheus prometheus-node-exporter iperf3 gnuplot; do
    command -v "$t" >/dev/null || { echo "closed_loop: $t missing (contrib/install-deps.sh)" >&2; exit 1; }
done
slo_ms=${CL_SLO_MS:-10}
low=${CL_LOW_RATE:-200} high=${CL_HIGH_RATE:-1500}
reply=${CL_REPLY_BYTES:-4096}
read -r p1 p2 p3 p4 p5 <<<"${CL_PHASES:-20 45 30 40 30}"
spike=${CL_SPIKE:-6}
mode=${CL_MODE:-control}
scrape=${CL_SCRAPE:-1}
floor=${CL_FLOOR:-10Mbit} step=${CL_STEP:-47Mbit} min_gap=${CL_MIN_GAP:-24Mbit}
full_decrease_at=${CL_FULL_DECREASE_AT:-4}
busy_ceil=${CL_BUSY_CEIL:-25Mbit}
congestion=${CL_CONGESTION:-1}
read -r strain_count strain_window strain_decrease <<<"${CL_STRAIN-}"
quiet=${CL_QUIET:-1}
rest_below=${CL_REST_BELOW:-0.1}
[[ $rest_below =~ ^0(\.[0-9]+)?$ ]] || { echo "closed_loop: CL_REST_BELOW is a fraction, 0 <= x < 1" >&2; exit 2; }
sweep=${CL_SWEEP:-} sweep_s=${CL_SWEEP_SECONDS:-25}
fixed_ceil=${CL_FIXED:-}
case $mode in
    control | busy) ;;
    fixed) [[ $fixed_ceil =~ ^[0-9]+Mbit$ ]] || { echo "closed_loop: CL_MODE=fixed needs CL_FIXED, e.g. 56Mbit" >&2; exit 2; } ;;
    *) echo "closed_loop: CL_MODE is control, busy or fixed" >&2; exit 2 ;;
esac
# The signal's delay follows the scrape: fetch as often as Prometheus scrapes,
# a range of three scrapes, and a dwell of at least fetch + range (+ a scrape
# for Prometheus itself, which lanes.toml does not know).
# A couple of seconds more for the FIFO to drain after a cut.
if ((scrape == 1)); then interval=1s range=3s dwell=7s
elif ((scrape == 15)); then interval=15s range=45s dwell=90s
else echo "closed_loop: CL_SCRAPE is 1 or 15" >&2; exit 2; fi
dwell=${CL_DWELL:-$dwell}
# The switch's queue is read as a max over the dwell less the fetch interval,
# so a decision sees every burst since the last one, not only those in the
# p99's range; its delay (interval + range) is then the dwell itself.
qrange=${CL_QUEUE_RANGE:-$((${dwell%s} - ${interval%s}))s}
lanesctl=$LANES_BUILDDIR/lanesctl/lanesctl
probe=$LANES_BUILDDIR/bench/inference_probe
out=${out:-$(mktemp -d /tmp/lanes-closed-loop.XXXXXX)}
# The probe (client and server) runs SCHED_FIFO, as in the demo, so that on a
# small shared machine p99 measures the fabric, not the CPU scheduler.
rt=()
[[ ${CL_RT:-1} != 0 ]] && chrt -f 50 true 2>/dev/null && rt=(chrt -f 50)
mkdir -p "$out"
say() { printf 'closed_loop: %s\n' "$*" >&2; }

source "$LANES_SRCDIR/bench/fabric.sh"
source "$LANES_SRCDIR/bench/lanes_cluster.sh"
pids=()
teardown() {
    local rc=$? p
    trap - EXIT INT TERM
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    fabric_destroy
    lanes_cluster_stop "$rc"
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

uplink=200mbit
FABRIC_HOSTS="" FABRIC_RATE=$uplink FABRIC_MTU=9000 FABRIC_LIMIT=${CL_FABRIC_LIMIT:-300} fabric_create >/dev/null ||
    { say "fabric failed"; exit 1; }
fabric_qos none >/dev/null || { say "fabric QoS failed"; exit 1; }
lanes_cluster_start "cl$$" 20Mbit 94Mbit || { say "cluster did not start"; exit 1; }
far=$(fabric_ip far) infer=$(fabric_ip infer1)
conf=$LANES_CLUSTER_CONF

# The loop's configuration. The agents read their own copy (the nodes' plugins
# keep the cluster's): the controller or the two-level switch, and for the
# sweep a fixed ceil (a window that always holds).
slo_s=$(python3 -c "print($slo_ms / 1000)")
mid=$(((low + high) / 2))
p99_q="histogram_quantile(0.99, sum by (le) (rate(lanes_probe_latency_seconds_bucket[$range])))"
# The load: the requests the clients offer (their schedule's rate), as a load
# balancer counts arrivals, over the p99's range, so that a decision reads
# both of the same seconds (a decision right after a step then reads a load
# between the two, as it reads a p99 between them); CL_LOAD=completed: the
# rate of replies, which falls while the queue holds them (the break itself)
# and loses the last second of each probe, one per load step.
case ${CL_LOAD:-offered} in
    offered) load_q="sum(avg_over_time(lanes_probe_offered_requests_per_second[$range]))" ;;
    completed) load_q="sum(rate(lanes_probe_latency_seconds_count[$range]))" ;;
    *) echo "closed_loop: CL_LOAD is offered or completed" >&2; exit 2 ;;
esac
agent_conf() {  # control | busy | fixed CEIL  -> the agents' lanes.toml on stdout
    local what=$1
    if [[ $what == control ]]; then
        cat "$conf"
    else
        sed "/^\[classes.training\]/,/^\[/ s/^ceil = \(.*\)$/ceil = \1\nbusy_window = \"busy\"\nbusy_ceil = \"${2:-$busy_ceil}\"/" "$conf"
    fi
    cat <<TOML

[signals.p99]
url = "http://$far:9090"
query = "$p99_q"
interval = "$interval"
timeout = "900ms"
stale_after = "$((${interval%s} * 5))s"
fallback = 0          # no requests: no latency

[signals.load]
url = "http://$far:9090"
query = "$load_q"
interval = "$interval"
timeout = "900ms"
stale_after = "$((${interval%s} * 5))s"
fallback = 0

# The switch's queueing delay (its exporter, started below): the worst at
# each end of the uplink since the last decision, summed (a request and its
# reply can meet both).
[signals.queue]
url = "http://$far:9090"
query = "sum(max_over_time(lanes_bench_switch_queue_seconds[$qrange]))"
interval = "$interval"
timeout = "900ms"
stale_after = "$((${interval%s} * 5))s"

[agent]
textfile_dir = "$out/textfile"
TOML
    case $what in
        control) cat <<TOML

[classes.training.control]
signal = "p99"
slo = $slo_s
margin = 0.2
floor = "$floor"
decrease = 0.5
full_decrease_at = $full_decrease_at
increase = "$step"
min_gap = "$min_gap"
dwell = "$dwell"
load_signal = "load"
rest_below = $rest_below
TOML
            ((congestion)) && cat <<TOML
congestion_signal = "queue"
congestion_above = $(python3 -c "print($slo_s / 5)")
TOML
            ((congestion && quiet)) && [[ $rest_below =~ [1-9] ]] && cat <<TOML
quiet_below = $(python3 -c "print($slo_s / 20)")
TOML
            ((congestion)) && [[ -n $strain_count ]] && cat <<TOML
strain_count = $strain_count
strain_window = $strain_window
strain_decrease = $strain_decrease
TOML
            ;;
        busy) cat <<TOML

# 2 while inference p99 misses the SLO, +1 while the load is high.
[signals.pressure]
url = "http://$far:9090"
query = "2 * ($p99_q > bool $slo_s) + (sum(rate(lanes_probe_latency_seconds_count[$range])) > bool $mid)"
interval = "$interval"
timeout = "900ms"
stale_after = "$((${interval%s} * 5))s"
fallback = 0

[windows.busy]
signal = "pressure"
above = 1.5
until_below = 0.5
TOML
            ;;
        fixed) cat <<TOML

[signals.always]
url = "http://$far:9090"
query = "vector(2)"
interval = "1s"
[windows.busy]
signal = "always"
above = 1
until_below = 0.5
TOML
            ;;
    esac
}
# Next to the cluster's: a relative [policy] script path still resolves.
aconf=$(dirname "$conf")/lanes-agent.toml aconf_fixed=$(dirname "$conf")/lanes-agent-fixed.toml
agent_conf "$mode" "$fixed_ceil" >"$aconf"
"$lanesctl" --config "$aconf" check >"$out/check.txt" 2>&1 || { cat "$out/check.txt" >&2; exit 1; }

# Prometheus and the inference clients on the far side of the uplink.
cat >"$out/prometheus.yml" <<YML
global:
  scrape_interval: ${scrape}s
scrape_configs:
  - job_name: probe
    static_configs:
      - targets: ['127.0.0.1:9101']
  - job_name: lanes   # the training nodes' textfiles (node_exporter, started below)
    static_configs:
      - targets: ['127.0.0.1:9111', '127.0.0.1:9112']
  - job_name: switch  # the switch's queue (its "exporter", below)
    static_configs:
      - targets: ['127.0.0.1:9113']
YML
fabric_spawn far "$out/prometheus.log" prometheus --config.file="$out/prometheus.yml" \
    --storage.tsdb.path="$out/tsdb" --web.listen-address="0.0.0.0:9090" --log.level=warn >/dev/null
pids+=("$FABRIC_SPAWNED")
for port in 5211 5212; do
    fabric_spawn far "$out/iperf-$port.log" iperf3 -s -p "$port" >/dev/null
    pids+=("$FABRIC_SPAWNED")
done

# The inference service and the training job, through Slurm.
nsweep=$(wc -w <<<"$sweep")
total=$((p1 + p2 + p3 + p4 + p5 + 15 + nsweep * 2 * (sweep_s + 5)))
cat >"$out/serve.sh" <<SH
#!/bin/sh
exec ${rt[*]} "$probe" serve --listen "$infer:7000" --reply-bytes $reply --exit-after $((total + 60))
SH
cat >"$out/train.sh" <<SH
#!/bin/bash
srun --ntasks-per-node=1 bash -c 'iperf3 -c $far -p \$((5211 + SLURM_PROCID)) -P 4 -t $total >/dev/null 2>&1'
SH
chmod 755 "$out/serve.sh" "$out/train.sh"
serve_id=$(lanes_cluster_submit -J serve-llm -o /dev/null "$out/serve.sh") || exit 1
train_id=$(lanes_cluster_submit -J train-llama -N2 --lanes-class=training -t $((total / 60 + 5)) -o "$out/train-%j.out" "$out/train.sh") ||
    exit 1
cluster_wait_job "$serve_id" RUNNING 30 >/dev/null || { say "inference service did not start"; exit 1; }
cluster_wait_job "$train_id" RUNNING 30 >/dev/null || { say "training did not start"; exit 1; }
say "inference job $serve_id on infer1, training job $train_id on train1+train2 (ceil 94Mbit, $mode${fixed_ceil:+ at $fixed_ceil}, scrape ${scrape}s)"

# The switch's own queue, every 0.1 s for the whole run (sweep included): a row
# that misses the SLO with the FIFO short was a stall of this machine, not a
# queue the ceil let build (bench/fabric.sh). Its exporter, as a switch's
# telemetry would: each end's worst queueing delay over the last second,
# written every 0.25 s for node_exporter's textfile collector; the agents'
# congestion signal (CL_CONGESTION=1).
fabric_queue_sample "$out/queues.txt" $((total + 70)) 0.1 &
pids+=($!)
mkdir -p "$out/textfile-switch"
python3 - "$out/queues.txt" "$out/textfile-switch/switch.prom" "$uplink" $((total + 70)) <<'PY' &
import os, sys, time
src, dst, rate, seconds = sys.argv[1], sys.argv[2], sys.argv[3].lower(), float(sys.argv[4])
bits = float(rate[:-4]) * {"k": 1e3, "m": 1e6, "g": 1e9}[rate[-4]] if rate[-4] in "kmg" else float(rate[:-3])
recent, pos, end = [], 0, time.time() + seconds
while time.time() < end:
    try:
        with open(src) as f:
            f.seek(pos)
            chunk = f.read()
    except OSError:
        chunk = ""
    done = chunk[:chunk.rfind("\n") + 1]
    pos += len(done.encode())
    for line in done.splitlines():
        f = line.split()
        if len(f) == 5:
            recent.append((float(f[0]), f[1], sum(int(x) for x in f[2:]) * 8 / bits))
    now = time.time()
    recent = [r for r in recent if r[0] > now - 1]
    text = "# TYPE lanes_bench_switch_queue_seconds gauge\n"
    for end_ in ("sw/up0", "far/up0"):
        text += 'lanes_bench_switch_queue_seconds{port="%s"} %.6f\n' % (end_, max((d for t, e, d in recent if e == end_), default=0))
    with open(dst + ".tmp", "w") as out:
        out.write(text)
    os.rename(dst + ".tmp", dst)
    time.sleep(0.25)
PY
pids+=($!)
fabric_spawn far "$out/node-exporter-switch.log" prometheus-node-exporter --web.listen-address="127.0.0.1:9113" \
    --collector.disable-defaults --collector.textfile --collector.textfile.directory="$out/textfile-switch" >/dev/null
pids+=("$FABRIC_SPAWNED")

# The agents, their lines timestamped.
stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done; }
agent_pids=()
start_agents() {  # CONF LOG-SUFFIX
    local node
    agent_pids=()
    for node in train1 train2; do
        SLURM_CONF=$CLUSTER_CONF nsenter --net="/run/netns/$(cluster_netns "$node")" -- \
            "$LANES_BUILDDIR/agent/lanes-agent" --config "$1" --node "$node" 2> >(stamp >"$out/agent-$node$2.log") &
        agent_pids+=($!)
        pids+=($!)
    done
}
stop_agents() {
    local p
    for p in "${agent_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${agent_pids[@]}"; do wait "$p" 2>/dev/null; done
}
start_agents "$aconf" ""

# Training throughput: the job's byte counters on both nodes, once a second,
# from the node textfile `lanesctl status --prometheus` writes (what
# lanes-metrics.service does); a node_exporter per node serves it to
# Prometheus, for `lanesctl report` at the end.
for node in train1 train2; do
    mkdir -p "$out/textfile-$node"
    port=$((9110 + ${node: -1}))
    fabric_spawn far "$out/node-exporter-$node.log" prometheus-node-exporter --web.listen-address="127.0.0.1:$port" \
        --collector.disable-defaults --collector.textfile --collector.textfile.directory="$out/textfile-$node" >/dev/null
    pids+=("$FABRIC_SPAWNED")
done
(
    for _ in $(seq $((total + 10))); do
        b=0
        for node in train1 train2; do
            cluster_run_node "$node" env SLURMD_NODENAME="$node" "$lanesctl" --config "$conf" status --node "$node" \
                --prometheus "$out/textfile-$node/lanes.prom" 2>/dev/null
            n=$(awk -v id="$train_id" '$1 ~ "^lanes_job_bytes_total[{]" && index($1, "hpc_job=\"" id "\"") { s += $2 }
                END { printf "%.0f\n", s }' "$out/textfile-$node/lanes.prom" 2>/dev/null)
            b=$((b + ${n:-0}))
        done
        printf '%s %s\n' "$(date +%s.%N)" "$b"
        sleep 1
    done
) >"$out/training-bytes.txt" &
pids+=($!)

load() {  # RATE SECONDS; each change of the load a step (closed_loop_score.py)
    echo "$(date +%s.%N) $1" >>"$out/steps.txt"
    fabric_exec far "${rt[@]}" "$probe" load --connect "$infer:7000" --rate "$1" --duration "$2" --connections 16 \
        --reply-bytes "$reply" --metrics 127.0.0.1:9101 --json >>"$out/load.json" 2>>"$out/load.err"
}
mark() { echo "$1 $(date +%s.%N)" >>"$out/phases.txt"; }
sleep 3
t0=$(date +%s)
: >"$out/phases.txt"
mark low; load "$low" "$p1"
mark high; load "$high" "$p2"
mark fall; load "$low" "$p3"
mark ramp
for i in 1 2 3 4 5; do load $((low + (high - low) * i / 5)) $((p4 / 5)); done
mark spike; load "$high" "$spike"; load "$low" $((p5 - spike))
mark end
t1=$(date +%s)
sleep 2
# The sweep: the highest fixed ceil that meets the SLO at each load.
if [[ -n $sweep ]]; then
    stop_agents
    for c in $sweep; do
        agent_conf fixed "${c}Mbit" >"$aconf_fixed"
        start_agents "$aconf_fixed" "-fixed$c"
        for rate in "$low" "$high"; do
            sleep 3
            echo "$c $rate $(date +%s.%N)" >>"$out/sweep.txt"
            load "$rate" "$sweep_s"
        done
        echo "end end $(date +%s.%N)" >>"$out/sweep.txt"
        stop_agents
    done
    sleep 2
fi
t2=$(date +%s)

# The p99 Prometheus saw, once a second.
# And the requests under the SLO, by second (attainment per 10 s row is summed
# from these: a 10 s row is the requests of its ten seconds).
row=$((scrape == 1 ? 10 : 30))
fabric_exec far python3 - "$t0" "$t2" "$out" "$p99_q" "$slo_s" "$row" <<'PY'
import json, sys, urllib.parse, urllib.request
t0, t2, out, p99_q, slo = sys.argv[1:6]
def series(q, path):
    url = "http://127.0.0.1:9090/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": q, "start": t0, "end": t2, "step": "1"})
    r = json.load(urllib.request.urlopen(url, timeout=30))
    with open(path, "w") as f:
        for s in r["data"]["result"]:
            for t, v in s["values"]:
                if v not in ("NaN", "+Inf"):
                    f.write("%s %s\n" % (t, v))
series(p99_q, out + "/p99.txt")
le = "%g" % float(slo)
row = int(sys.argv[6])
def rows(q, path):
    url = "http://127.0.0.1:9090/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": q, "start": int(t0) + row, "end": t2, "step": str(row)})
    r = json.load(urllib.request.urlopen(url, timeout=30))
    with open(path, "w") as f:
        for s in r["data"]["result"]:
            for t, v in s["values"]:
                f.write("%s %s\n" % (t, v))
rows('sum(increase(lanes_probe_latency_seconds_bucket{le="%s"}[%ds]))' % (le, row), out + "/good.txt")
rows("sum(increase(lanes_probe_latency_seconds_count[%ds]))" % row, out + "/all.txt")
PY
# The same run as lanesctl report sees it: 10 s rows, training bytes next to the SLO.
fabric_exec far "$lanesctl" --config "$aconf" report --prometheus http://127.0.0.1:9090 --slo "${slo_ms}ms" \
    --from "@$t0" --to "@$t1" --step ${row}s ${plot:+--plot "${plot%.png}-report.png"} >"$out/report.txt" 2>&1
cat "$out/report.txt"
cluster_run_ctl scancel "$train_id" "$serve_id" >/dev/null 2>&1

# The figures on stdout, the chart with --plot.
printf '%s\n' "$t0" "$slo_ms" "$row" "$mode" "$(fabric__tc_rate_bits "$uplink")" >"$out/score.args"
python3 "$LANES_SRCDIR/bench/closed_loop_score.py" "$out" --best "${CL_BEST:-}" --json "${CL_JSON:-}"
if [[ -n $plot ]]; then
    gnuplot <<EOF || { say "gnuplot failed"; exit 1; }
set terminal pngcairo size 960,540 font "Sans,10"
set output "$plot"
set title "Closed loop on a real Slurm cluster ($mode): inference p99 vs training, lanes-agent moving the ceil\n(2 training nodes x 4 TCP streams, ceil 94 Mbit/s per node; 200 Mbit/s shared FIFO uplink; SLO $slo_ms ms)"
set xlabel "seconds"
set ylabel "inference p99 (ms, log scale)"
set logscale y
set y2label "training throughput (Mbit/s)"
set y2range [0:220]
set ytics nomirror
set y2tics
set key below horizontal
set xrange [0:*]
load "$out/marks.gp"
plot "$out/timeline.dat" using 2:3 with lines lw 2 lc rgb "#cc3311" title "inference p99 (ms)", \
     "$out/throughput.dat" using 1:2 axes x1y2 with lines lw 2 lc rgb "#4477aa" title "training, both nodes (Mbit/s)", \
     $slo_ms with lines dt 2 lw 1.5 lc rgb "#222222" title "SLO", \
     NaN with lines lw 1.5 lc rgb "#cc3311" dt 1 title "agent: ceil down (red) / up (green)"
EOF
    say "chart in $plot"
fi
say "data in $out"
