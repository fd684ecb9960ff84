#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The closed loop, shown on the demo's real cluster (bench/fabric.sh's shared
# 200 Mbit/s uplink, one FIFO: the switch does not trust DSCP, so only the
# nodes' caps protect inference): a training job through Slurm on train1 and
# train2 (ceil 94 Mbit/s each), an inference service through Slurm on infer1,
# its clients on the far side with `inference_probe load --metrics`, Debian's
# prometheus scraping them, and `lanes-agent` on both training nodes
# following [signals.pressure] (PromQL over the probe's histogram and request
# rate) through [windows.busy]:
#
#   inference load rises -> p99 passes the SLO -> the window begins and the
#   agents tighten training's ceil to busy_ceil -> p99 returns under the SLO
#   while the load stays high -> load falls -> the window ends and training
#   gets its ceil back.
#
# The signal: 2 while the p99 is above the SLO, +1 while the request rate is
# high. The window begins above 1.5 (the SLO is missed) and ends below 0.5
# (the SLO is met and the load is low), so a tightened training does not
# bounce back while the load that needed it lasts.
#
# It prints the timeline's figures, then `lanesctl report` over the run (10 s
# rows: training bytes from Lanes' counters next to p99 and SLO attainment).
#
#   bash bench/closed_loop.sh [--plot docs/closed-loop.png] [--out DIR]
#   (--plot also writes the report's chart next to it: docs/closed-loop-report.png)
# Settings: CL_SLO_MS (10), CL_LOW_RATE (200 req/s), CL_HIGH_RATE (1500),
# CL_REPLY_BYTES (4096), CL_PHASES ("20 45 30": seconds of low, high, low load),
# CL_BUSY_CEIL (25Mbit). Needs root and a built tree (LANES_BUILDDIR, ./build).
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
read -r p1 p2 p3 <<<"${CL_PHASES:-20 45 30}"
busy_ceil=${CL_BUSY_CEIL:-25Mbit}
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

FABRIC_HOSTS="" FABRIC_RATE=200mbit FABRIC_MTU=9000 FABRIC_LIMIT=${CL_FABRIC_LIMIT:-300} fabric_create >/dev/null ||
    { say "fabric failed"; exit 1; }
fabric_qos none >/dev/null || { say "fabric QoS failed"; exit 1; }
lanes_cluster_start "cl$$" 20Mbit 94Mbit || { say "cluster did not start"; exit 1; }
far=$(fabric_ip far) infer=$(fabric_ip infer1)
conf=$LANES_CLUSTER_CONF

# The loop's configuration: the signal, the window, the training class's busy ceil.
sed -i "/^\[classes.training\]/,/^\[/ s/^ceil = \(.*\)$/ceil = \1\nbusy_window = \"busy\"\nbusy_ceil = \"$busy_ceil\"/" "$conf"
slo_s=$(python3 -c "print($slo_ms / 1000)")
mid=$(((low + high) / 2))
cat >>"$conf" <<TOML

# bench/closed_loop.sh: 2 while inference p99 misses the SLO, +1 while the load is high.
[signals.pressure]
url = "http://$far:9090"
query = "2 * (histogram_quantile(0.99, sum by (le) (rate(lanes_probe_latency_seconds_bucket[3s]))) > bool $slo_s) + (sum(rate(lanes_probe_latency_seconds_count[3s])) > bool $mid)"
interval = "1s"
timeout = "900ms"
stale_after = "5s"
fallback = 0

[windows.busy]
signal = "pressure"
above = 1.5
until_below = 0.5

[agent]
textfile_dir = "$out/textfile"
TOML
"$lanesctl" --config "$conf" check >"$out/check.txt" 2>&1 || { cat "$out/check.txt" >&2; exit 1; }

# Prometheus and the inference clients on the far side of the uplink.
cat >"$out/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: probe
    static_configs:
      - targets: ['127.0.0.1:9101']
  - job_name: lanes   # the training nodes' textfiles (node_exporter, started below)
    static_configs:
      - targets: ['127.0.0.1:9111', '127.0.0.1:9112']
YML
fabric_spawn far "$out/prometheus.log" prometheus --config.file="$out/prometheus.yml" \
    --storage.tsdb.path="$out/tsdb" --web.listen-address="0.0.0.0:9090" --log.level=warn >/dev/null
pids+=("$FABRIC_SPAWNED")
for port in 5211 5212; do
    fabric_spawn far "$out/iperf-$port.log" iperf3 -s -p "$port" >/dev/null
    pids+=("$FABRIC_SPAWNED")
done

# The inference service and the training job, through Slurm.
total=$((p1 + p2 + p3 + 15))
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
train_id=$(lanes_cluster_submit -J train-llama -N2 --lanes-class=training -t 30 -o "$out/train-%j.out" "$out/train.sh") ||
    exit 1
cluster_wait_job "$serve_id" RUNNING 30 >/dev/null || { say "inference service did not start"; exit 1; }
cluster_wait_job "$train_id" RUNNING 30 >/dev/null || { say "training did not start"; exit 1; }
say "inference job $serve_id on infer1, training job $train_id on train1+train2 (ceil 94Mbit, busy $busy_ceil)"

# The agents, their lines timestamped.
stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done; }
for node in train1 train2; do
    SLURM_CONF=$CLUSTER_CONF nsenter --net="/run/netns/$(cluster_netns "$node")" -- \
        "$LANES_BUILDDIR/agent/lanes-agent" --config "$conf" --node "$node" 2> >(stamp >"$out/agent-$node.log") &
    pids+=($!)
done

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

load() {  # RATE SECONDS
    fabric_exec far "${rt[@]}" "$probe" load --connect "$infer:7000" --rate "$1" --duration "$2" --connections 16 \
        --reply-bytes "$reply" --metrics 127.0.0.1:9101 --json >>"$out/load.json" 2>>"$out/load.err"
}
sleep 3
t0=$(date +%s)
echo "low $(date +%s.%N)" >"$out/phases.txt"
load "$low" "$p1"
echo "high $(date +%s.%N)" >>"$out/phases.txt"
load "$high" "$p2"
echo "fall $(date +%s.%N)" >>"$out/phases.txt"
load "$low" "$p3"
t1=$(date +%s)
echo "end $(date +%s.%N)" >>"$out/phases.txt"
sleep 2

# The p99 Prometheus saw, once a second.
fabric_exec far python3 - "$t0" "$t1" "$out/p99.txt" <<'PY'
import json, sys, urllib.parse, urllib.request
q = "histogram_quantile(0.99, sum by (le) (rate(lanes_probe_latency_seconds_bucket[3s])))"
url = "http://127.0.0.1:9090/api/v1/query_range?" + urllib.parse.urlencode(
    {"query": q, "start": sys.argv[1], "end": sys.argv[2], "step": "1"})
r = json.load(urllib.request.urlopen(url, timeout=10))
with open(sys.argv[3], "w") as f:
    for series in r["data"]["result"]:
        for t, v in series["values"]:
            if v not in ("NaN", "+Inf"):
                f.write("%s %s\n" % (t, v))
PY
# The same run as lanesctl report sees it: 10 s rows, training bytes next to the SLO.
fabric_exec far "$lanesctl" --config "$conf" report --prometheus http://127.0.0.1:9090 --slo "${slo_ms}ms" \
    --from "@$t0" --to "@$t1" --step 10s ${plot:+--plot "${plot%.png}-report.png"} >"$out/report.txt" 2>&1
cat "$out/report.txt"
cluster_run_ctl scancel "$train_id" "$serve_id" >/dev/null 2>&1

# The timeline: figures on stdout, the chart with --plot.
python3 - "$out" "$t0" "$slo_ms" "$busy_ceil" <<'PY'
import re, statistics, sys
out, t0, slo = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]) / 1000
phases = {l.split()[0]: float(l.split()[1]) for l in open(out + "/phases.txt")}
p99 = [(float(t), float(v)) for t, v in (l.split() for l in open(out + "/p99.txt"))]
shifts = []
for node in ("train1", "train2"):
    for l in open("%s/agent-%s.log" % (out, node)):
        m = re.search(r"ceil (\S+) -> (\S+)", l)
        if m and "training" in l:
            shifts.append((float(l.split()[0]), node, m.group(1), m.group(2)))
shifts.sort()
tb = [(float(t), int(b)) for t, b in (l.split() for l in open(out + "/training-bytes.txt"))]
thr = []
for (ta, ba), (tb_, bb) in zip(tb, tb[1:]):
    if bb >= ba and tb_ > ta:
        thr.append(((ta + tb_) / 2, (bb - ba) * 8 / (tb_ - ta) / 1e6))
with open(out + "/timeline.dat", "w") as f:
    for t, v in p99:
        f.write("p %.3f %.3f\n" % (t - t0, v * 1e3))
with open(out + "/throughput.dat", "w") as f:
    for t, v in thr:
        f.write("%.3f %.2f\n" % (t - t0, v))
with open(out + "/shifts.dat", "w") as f:
    for t, node, a, b in shifts:
        f.write("%.3f %s %s->%s\n" % (t - t0, node, a, b))
def first(pred, xs, after):
    return next((t for t, v in xs if t >= after and pred(v)), None)
rise, fall = phases["high"], phases["fall"]
cross = first(lambda v: v > slo, p99, rise)
tight = next((t for t, n, a, b in shifts if t >= rise and b != a and b.lower() == sys.argv[4].lower()), None)
back = first(lambda v: v <= slo, p99, tight or rise)
restore = next((t for t, n, a, b in shifts if t >= fall and a.lower() == sys.argv[4].lower()), None)
def mean_in(xs, a, b):
    v = [y for t, y in xs if a <= t < b]
    return statistics.mean(v) if v else float("nan")
def rel(t):
    return "-" if t is None else "%.1f s" % (t - t0)
print("phases: low load from 0 s, high load at %s, low again at %s, end %s" % (rel(rise), rel(fall), rel(phases["end"])))
print("p99 above the %.0f ms SLO at %s; training tightened at %s (%s after the crossing)" % (
    slo * 1e3, rel(cross), rel(tight), "-" if not (cross and tight) else "%.1f s" % (tight - cross)))
print("p99 back under the SLO at %s (%s after the shift); training restored at %s (%s after the load fell)" % (
    rel(back), "-" if not (back and tight) else "%.1f s" % (back - tight), rel(restore),
    "-" if not restore else "%.1f s" % (restore - fall)))
end = phases["end"]
for name, a, b in (("low load", t0, rise), ("high load, before the shift", rise, tight or fall),
                   ("high load, tightened", (tight or fall) + 2, fall), ("low load again", (restore or fall) + 2, end)):
    print("  %-28s p99 median %6.2f ms   training %6.1f Mbit/s" % (
        name, statistics.median([v for t, v in p99 if a <= t < b] or [float("nan")]) * 1e3, mean_in(thr, a, b)))
print("shifts: " + "; ".join("%s %s %s" % (rel(t), n, d) for t, n, d in
                             ((t, n, a + "->" + b) for t, n, a, b in shifts)))
with open(out + "/marks.gp", "w") as f:
    for name, t in (("load rises", rise), ("load falls", fall)):
        f.write('set arrow from %.1f, graph 0 to %.1f, graph 1 nohead dt 3 lc rgb "#777777"\n' % (t - t0, t - t0))
        f.write('set label "%s" at %.1f, graph 0.97 offset 0.5,0 font ",9"\n' % (name, t - t0))
    for t, n, a, b in shifts:
        f.write('set arrow from %.1f, graph 0 to %.1f, graph 1 nohead lc rgb "%s" lw 1.5\n' % (
            t - t0, t - t0, "#cc3311" if b.lower() == sys.argv[4].lower() else "#228833"))
PY
if [[ -n $plot ]]; then
    gnuplot <<EOF || { say "gnuplot failed"; exit 1; }
set terminal pngcairo size 960,540 font "Sans,10"
set output "$plot"
set title "Closed loop on a real Slurm cluster: inference p99 vs training, lanes-agent shifting the ceil\n(2 training nodes x 4 TCP streams, ceil 94 -> $busy_ceil per node; 200 Mbit/s shared FIFO uplink; SLO $slo_ms ms)"
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
     NaN with lines lw 1.5 lc rgb "#cc3311" dt 1 title "agent: tighten (red) / restore (green)"
EOF
    say "chart in $plot"
fi
say "data in $out"
