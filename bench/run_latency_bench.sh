#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/run_latency_bench.sh: does Lanes keep inference fast on a shared fabric
# while training still gets the bandwidth inference leaves?
#
# Builds bench/fabric.sh's fabric (two training hosts and an inference host on a
# switch whose uplink is the bottleneck), runs each scenario several times
# (interleaved, so a slow moment of the machine hits every scenario alike) and
# prints the medians and the ratios of this one run.
#
#   inference: inference_probe serve on infer1, the open-loop load client on the
#              far side; 1 KB replies cross the uplink switch -> far side.
#   training:  iperf3 -P 4 (cubic) from train1 and train2 to the far side: the
#              same direction, the congested one.
#   measured:  inference latency by the probe; training goodput and inference
#              bytes by nftables counters where they arrive (far side).
#
# Scenarios (--scenarios, comma-separated; default: all):
#   floor       no training: the unloaded latency floor
#   noqos       training, FIFO switch, nothing else              ("without Lanes")
#   lanes-idle  the real plugins, no training: an inference job submitted
#               through Slurm (job_submit/lanes, spank_lanes marks it AF41) on
#               a slurmd attached to the fabric; the floor through the plugins
#   lanes       the real plugins under load                       ("with Lanes")
#               the same inference job, and a 2-node training job submitted
#               through Slurm (--lanes-class=training: spank_lanes caps it at
#               --cap per node, bounds its GSO by lanes.toml's gso_burst and
#               marks it CS1); DSCP-aware switch. Nothing is set by hand.
#   lanes-nocap the same training load as a job of class "batch" (no cap, no
#               marks): what the GSO bound costs where nothing is capped (not
#               in the default list; compare runs with --gso-burst off)
# and, by hand on the bench's own hosts (comparisons: what each part of the
# mechanism contributes):
#   cap         node caps on the training hosts only (with --gso)
#   cap-gso64k  the same caps with Linux's default 64 KB GSO bursts
#   dscp        training marked CS1, DSCP-aware switch, no caps
#   both        caps + --gso + CS1 marks + DSCP-aware switch, by hand
#   borrow      "both" with inference idle, then bursting: training before/during
# The lanes scenarios need the built plugins (LANES_BUILDDIR) and Slurm; they
# start tests/cluster/cluster.sh's cluster with contrib/demo/lanes.toml.in
# (bench/lanes_cluster.sh). --no-slurm leaves them out of the default list.
# and two more, not in the default list (inference marks its own traffic; the
# switch trusts DSCP; training is neither marked nor capped):
#   client-ef   the client marks its requests EF (IP_TOS / IPV6_TCLASS)
#   server-ef   the server marks its replies EF (the congested direction)
#
# Options:
#   --quick            CI size: 1 repetition, 2 s per measurement (< 60 s)
#   --reps N           repetitions; medians are reported (default 3)
#   --duration S       seconds of inference load per measurement (default 5)
#   --rate N           inference requests per second (default 200)
#   --connections N    inference client connections (default 16: with few
#                      connections requests pipeline and TCP holds replies back
#                      on a congested path, which would inflate the no-QoS case)
#   --link RATE        uplink rate (default 200mbit)
#   --mtu N            MTU of every fabric link (default 1500; 9000: jumbo frames)
#   --cap PCT          node cap per training host, % of the link (default 47.5:
#                      both hosts together 95%)
#   --cap-burst BYTES  HTB burst of the node cap (default 3028: two frames)
#   --cap-limit N      FIFO length under the node cap (default 100 packets)
#   --gso BYTES        gso_max_size on capped training hosts (default 4500: three
#                      frames); "default" keeps Linux's 64 KB
#   --burst-rate N --burst-bytes B   the inference burst of "borrow" (default
#                      1500/s of 4096-byte replies, ~52 Mbit/s)
#   --cc ALGO          TCP congestion control for training and inference
#                      (default cubic, Linux's default; this machine defaults to bbr)
#   --window SIZE      iperf3 -w (default 2M: training is not receive-window bound)
#   --ipv6             inference over IPv6
#   --no-rt            the probe without SCHED_FIFO (see docs/benchmark.md)
#   --no-slurm         leave lanes-idle and lanes out of the default scenarios
#   --gso-burst T      add gso_burst = "T" to lanes.toml's [nodes] for the Slurm
#                      scenarios (spank_lanes' GSO bound; "off" turns it off;
#                      default: what contrib/demo/lanes.toml.in says)
#   --json FILE        every measurement, the medians and the ratios as JSON
#   --plot FILE.png    a chart of the medians (gnuplot)
#   --replot JSON      no measurements: draw --plot from an earlier --json file
#   --probe PATH       the inference_probe binary (default: $LANES_BUILDDIR/bench/)
# LANES_BENCH_KEEP=1 keeps the work directory (probe and iperf3 logs).
# Needs root, iperf3, ethtool, nft, tc, python3. Exit: 0 done, 1 error, 77 not root.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/fabric.sh
source "$here/fabric.sh"

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

reps=3 duration=5 rate=200 connections=16 link=200mbit cap_pct=47.5 cap_burst=3028 cap_limit=100
gso=4500 warmup=2 burst_rate=1500 burst_bytes=4096 cc=cubic window=2M ipv6=0 rt=1
json_out="" plot_out="" replot=""
scenarios="" slurm=1
probe=${LANES_BUILDDIR:-$here/..}/bench/inference_probe
while (($#)); do
    case $1 in
        --quick) reps=1 duration=2 warmup=1.5 ;;
        --reps | --duration | --rate | --connections | --link | --cap | --cap-burst | --cap-limit | --gso | \
            --burst-rate | --burst-bytes | --cc | --window | --scenarios | --json | --plot | --probe | --replot | \
            --gso-burst | --mtu)
            (($# >= 2)) || die "$1 needs a value"
            v=$2
            case $1 in
                --reps) reps=$v ;; --duration) duration=$v ;; --rate) rate=$v ;;
                --connections) connections=$v ;; --link) link=$v ;; --cap) cap_pct=$v ;;
                --cap-burst) cap_burst=$v ;; --cap-limit) cap_limit=$v ;; --gso) gso=$v ;;
                --burst-rate) burst_rate=$v ;; --burst-bytes) burst_bytes=$v ;; --cc) cc=$v ;;
                --window) window=$v ;; --scenarios) scenarios=$v ;; --json) json_out=$v ;;
                --plot) plot_out=$v ;; --probe) probe=$v ;; --replot) replot=$v ;;
                --gso-burst) export LANES_DEMO_GSO_BURST=$v ;;
                --mtu) export FABRIC_MTU=$v ;;
            esac
            shift ;;
        --ipv6) ipv6=1 ;;
        --no-rt) rt=0 ;;
        --no-slurm) slurm=0 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
    shift
done
# plot_chart JSON PNG: p99 per scenario (log scale) and training's share of the
# leftover, from a --json file.
plot_chart() {
    local dat floor reps link
    dat=$(mktemp "${TMPDIR:-/tmp}/lanes-plot.XXXXXX") || return 1
    reps=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["reps"])' "$1") || return 1
    link=$(python3 -c 'import json,sys; print("%gmbit" % json.load(open(sys.argv[1]))["link_mbit"])' "$1") || return 1
    python3 - "$1" "$dat" <<'EOF' || return 1
import json, sys
j = json.load(open(sys.argv[1]))
short = {"floor": "floor", "noqos": "no QoS", "cap": "hand: cap", "cap-gso64k": "hand: 64K",
         "dscp": "hand: DSCP", "both": "hand: all", "borrow": "hand: burst",
         "lanes-idle": "Lanes idle", "lanes": "WITH LANES", "lanes-nocap": "Lanes no cap",
         "client-ef": "client EF", "server-ef": "server EF"}
with open(sys.argv[2], "w") as f:
    for s, v in j["summary"].items():
        t = v.get("train_vs_leftover")
        f.write('"%s" %s %s\n' % (short[s], v["p99_ms"], "NaN" if t is None else 100 * t))
EOF
    floor=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"].get("floor", {}).get("p99_ms") or "NaN")' "$1")
    gnuplot <<EOF || return 1
set terminal pngcairo size 1000,600 font "Sans,10"
set output "$2"
set multiplot layout 2,1 title "Inference p99 and training throughput on a shared $link uplink (medians of $reps runs)"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.7
set grid ytics
set xtics scale 0 font ",9"
set logscale y
set yrange [0.05:*]
set ylabel "inference p99 (ms, log)"
set key top right opaque
plot "$dat" using 2:xtic(1) title "p99" lc rgb "#4477aa", \
     "" using 0:(\$2 * 1.25):(sprintf("%.2f", \$2)) with labels notitle, \
     $floor * 1.5 with lines dt 2 lc rgb "#cc3311" title "1.5 x floor"
unset logscale y
set yrange [0:125]
set key bottom right opaque
set ylabel "training, % of leftover"
plot "$dat" using 3:xtic(1) title "training goodput / (link - inference)" lc rgb "#228833", \
     "" using 0:(\$3 + 4):(sprintf("%.0f%%", \$3)) with labels notitle, \
     90 with lines dt 2 lc rgb "#cc3311" title "90%"
unset multiplot
EOF
    rm -f "$dat"
}
if [[ -n $replot ]]; then
    [[ -n $plot_out ]] || die "--replot needs --plot FILE.png"
    command -v gnuplot >/dev/null || die "--plot needs gnuplot (contrib/install-deps.sh)"
    plot_chart "$replot" "$plot_out" || die "cannot draw $plot_out"
    say "chart in $plot_out"
    exit 0
fi
if (($(id -u) != 0)); then
    say "needs root (network namespaces, tc, nft)"
    exit 77
fi
num_re='^[0-9]+(\.[0-9]+)?$'
[[ $reps =~ ^[1-9][0-9]*$ ]] || die "--reps '$reps' is not a positive integer"
for v in "$duration" "$rate" "$cap_pct" "$burst_rate"; do [[ $v =~ $num_re ]] || die "'$v' is not a number"; done
for v in "$connections" "$cap_burst" "$cap_limit" "$burst_bytes"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || die "'$v' is not a positive integer"
done
[[ -x $probe ]] || die "no inference_probe at $probe (build it, or --probe PATH)"
for tool in iperf3 ethtool nft tc python3; do command -v "$tool" >/dev/null || die "$tool is missing"; done
build=${LANES_BUILDDIR:-$here/..}
[[ -x $build/lanesctl/lanesctl ]] && FABRIC_LANESCTL=${FABRIC_LANESCTL:-$build/lanesctl/lanesctl}
link_bits=$(fabric__tc_rate_bits "$link") || die "bad --link '$link'"
cap_bits=$(awk -v l="$link_bits" -v p="$cap_pct" 'BEGIN { printf "%.0f", l * p / 100 }')
if [[ -z $scenarios ]]; then
    scenarios="floor,noqos,cap,cap-gso64k,dscp,both,borrow"
    ((slurm)) && scenarios="floor,lanes-idle,noqos,lanes,cap,cap-gso64k,dscp,both,borrow"
fi
IFS=, read -r -a scen_list <<<"$scenarios"
use_slurm=0
for s in "${scen_list[@]}"; do
    case $s in
        floor | noqos | cap | cap-gso64k | dscp | both | borrow | client-ef | server-ef) ;;
        lanes | lanes-idle | lanes-nocap) use_slurm=1 ;;
        *) die "unknown scenario '$s'" ;;
    esac
done
if [[ -n $plot_out ]] && ! command -v gnuplot >/dev/null; then die "--plot needs gnuplot (contrib/install-deps.sh)"; fi


work=$(mktemp -d "${TMPDIR:-/tmp}/lanes-bench.XXXXXX") || die "mktemp"
cleanup() {
    ((use_slurm)) && lanes_cluster_stop
    fabric_destroy
    [[ -n ${LANES_BENCH_KEEP:-} ]] && say "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# The probe (server and client) runs SCHED_FIFO: this 2-core machine is shared
# with compilers, and without it their time slices show up as "latency".
rt_cmd=()
if ((rt)); then
    if chrt -f 50 true 2>/dev/null; then rt_cmd=(chrt -f 50); else say "SCHED_FIFO not allowed; probe runs unprioritised"; fi
fi

FABRIC_RATE=$link
fabric_create || die "cannot build the fabric"

# Everything is bounded: servers get a lifetime, clients a duration.
lifetime=$(awk -v r="$reps" -v d="$duration" -v n="${#scen_list[@]}" -v w="$warmup" \
    'BEGIN { printf "%d", r * n * (2 * d + w + 20) + 120 }')
port=7000
if ((ipv6)); then target="[$(fabric_ip6 infer1)]:$port"; else target="$(fabric_ip infer1):$port"; fi
fabric_spawn infer1 "$work/serve.log" "${rt_cmd[@]}" "$probe" serve --listen "[::]:$port" --congestion "$cc" \
    --exit-after "$lifetime" || die "cannot start the probe server"
# A second server whose replies are marked EF (scenario server-ef).
fabric_spawn infer1 "$work/serve-ef.log" "${rt_cmd[@]}" "$probe" serve --listen "[::]:$((port + 1))" \
    --congestion "$cc" --dscp EF --exit-after "$lifetime" || die "cannot start the probe server"
i=0
for h in $(fabric_members train); do
    fabric_spawn far "$work/iperf-server-$h.log" timeout "$lifetime" iperf3 -s -p $((5201 + i)) || die "iperf3 -s"
    i=$((i + 1))
done
lanes_port=$((port + 2))
if ((use_slurm)); then
    # The real plugins: a Slurm cluster on the same fabric, its nodes attached as
    # lanes-train1, lanes-train2, lanes-infer1 (not "train" members: by-hand
    # load never runs there). The inference server is a Slurm job (classified
    # inference by its name, marked AF41 by spank_lanes) for the whole run.
    export LANES_SRCDIR=${LANES_SRCDIR:-$(cd "$here/.." && pwd)} LANES_BUILDDIR=$build
    for f in job_submit/.libs/job_submit_lanes.so spank/.libs/spank_lanes.so lanesctl/lanesctl; do
        [[ -e $build/$f ]] || die "the lanes scenarios need $build/$f (build it, or --no-slurm)"
    done
    # shellcheck source=bench/lanes_cluster.sh
    source "$here/lanes_cluster.sh"
    LANES_CLUSTER_ADDR_BASE=20 lanes_cluster_start "bench$$" "${cap_bits}bit" "${cap_bits}bit" lanes- ||
        die "cannot start the Slurm cluster with the Lanes plugins"
    lanesctl=$build/lanesctl/lanesctl
    cat >"$work/serve-lanes.sh" <<SH
#!/bin/sh
exec ${rt_cmd[*]} "$probe" serve --listen "[::]:$lanes_port" --congestion "$cc" --exit-after "$lifetime"
SH
    cat >"$work/train-lanes.sh" <<SH
#!/bin/bash
# Training through Slurm: from each node, iperf3 -P 4 to the far side.
srun --ntasks-per-node=1 bash -c 'exec iperf3 -c $(fabric_ip far) -p \$((5211 + SLURM_PROCID)) -P 4 -C $cc -w $window -t \$BENCH_TRAIN_SECS --connect-timeout 2000 --forceflush >"$work/train-lanes-\$SLURM_JOB_ID-\$SLURMD_NODENAME.log" 2>&1'
SH
    chmod 755 "$work/serve-lanes.sh" "$work/train-lanes.sh"
    for p in 5211 5212; do
        fabric_spawn far "$work/iperf-server-lanes-$p.log" timeout "$lifetime" iperf3 -s -p "$p" || die "iperf3 -s"
    done
    lanes_serve_id=$(lanes_cluster_submit -J serve-bench -w infer1 -t $((lifetime / 60 + 2)) \
        -o "$work/serve-lanes.log" "$work/serve-lanes.sh") || die "cannot submit the inference job"
    cluster_wait_job "$lanes_serve_id" RUNNING 60 >/dev/null || die "the inference job did not start"
    lanes_serve_partition=$(cluster_job_field "$lanes_serve_id" Partition)
    say "Slurm cluster with the Lanes plugins up; inference job $lanes_serve_id in partition $lanes_serve_partition"
fi
for log in serve serve-ef $(((use_slurm)) && echo serve-lanes); do
    for _ in $(seq 200); do grep -q 'serving on' "$work/$log.log" 2>/dev/null && break; sleep 0.05; done
    grep -q 'serving on' "$work/$log.log" || die "probe server: $(cat "$work/$log.log")"
done

# Counted where traffic arrives (far side): training payload (IP bytes minus
# 52 bytes of IPv4/IPv6+TCP headers is close enough: IPv4 with timestamps) and
# inference replies on the wire (IP bytes plus the 14-byte Ethernet header).
fabric_exec far nft -f - <<EOF || die "cannot set up the meters (nft)"
table inet bench {
    counter training { }
    counter inference { }
    chain in {
        type filter hook input priority 0; policy accept;
        tcp dport 5201-5299 counter name training
        tcp sport { $port, $((port + 1)), $lanes_port } counter name inference
    }
}
EOF
# meter_read: "SECONDS TRAIN_PAYLOAD_BYTES INFERENCE_WIRE_BYTES" now.
meter_read() {
    local now
    now=$(date +%s.%N)
    fabric_exec far nft list counters table inet bench | awk -v now="$now" '
        /counter training/ { which = "t" } /counter inference/ { which = "i" }
        /packets/ { if (which == "t") tb = $4 - 52 * $2; else ib = $4 + 14 * $2 }
        END { printf "%s %.0f %.0f\n", now, tb, ib }'
}
# meter_mbit "READING0" "READING1" FIELD(2 training, 3 inference): Mbit/s between.
meter_mbit() {
    awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { split(a, x, " "); split(b, y, " ")
        printf "%.2f", (y[f] - x[f]) * 8 / (y[1] - x[1]) / 1e6 }'
}
# meter_bytes "READING0" "READING1" FIELD: bytes counted between the readings.
meter_bytes() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.0f", y[f] - x[f] }'; }
uplink_drops() { fabric_exec sw tc -s qdisc show dev up0 | awk '/^qdisc pfifo/ { f = 1; next } f && /dropped/ { gsub(/[(),]/, " "); d += $7; f = 0 } END { print d + 0 }'; }
# uplink_classes: "1:10=BYTES,1:20=BYTES,..." sent by each uplink class toward
# the far side (the congested way) since the last fabric_qos.
uplink_classes() { fabric_uplink_stats sw | awk '{ printf "%s%s=%s", n++ ? "," : "", $1, $2 }'; }
# node_caps: "BYTES OVERLIMITS GSO" summed over the training hosts' by-hand
# caps (HTB class 1:10 on their fabric NIC), and the smallest gso_max_size.
node_caps() {
    local h b=0 o=0 g=65536 x y z
    for h in $(fabric_members train); do
        read -r x y < <(fabric_exec "$h" tc -s class show dev "$(fabric_dev "$h")" classid 1:10 2>/dev/null |
            awk '/Sent/ { gsub(/[(),]/, " "); print $2, $9; f = 1 } END { if (!f) print 0, 0 }')
        z=$(fabric_exec "$h" ip -d link show dev "$(fabric_dev "$h")" | grep -o 'gso_max_size [0-9]*' | awk '{ print $2 }')
        b=$((b + ${x:-0})) o=$((o + ${y:-0}))
        ((${z:-65536} < g)) && g=$z
    done
    printf '%s %s %s\n' "$b" "$o" "$g"
}

# configure QOS CAP(on|off) GSO(bytes|default) MARK(dscp|off)
configure() {
    local qos=$1 cap=$2 g=$3 mark=$4 h
    fabric_qos "$qos" || return 1
    for h in $(fabric_members train); do
        if [[ $cap == on ]]; then
            fabric_node_cap "$h" "${cap_bits}bit" "$cap_burst" "$cap_limit" || return 1
        else
            fabric_node_cap "$h" off
        fi
        fabric_gso "$h" "$g" && fabric_mark "$h" "$mark" || return 1
    done
}

# start_training SECONDS TAG: iperf3 from every training host; PIDs in train_pids.
start_training() {
    local secs=$1 tag=$2 i=0 h
    train_pids=()
    for h in $(fabric_members train); do
        fabric_spawn "$h" "$work/$tag-$h.log" iperf3 -c "$(fabric_ip far)" -p $((5201 + i)) -P 4 -C "$cc" \
            -w "$window" -t "$secs" --connect-timeout 2000
        train_pids+=("$FABRIC_SPAWNED")
        i=$((i + 1))
    done
}

# probe_load SECONDS RATE REPLY_BYTES OUT [PORT [ARGS...]]: the inference
# client on the far side.
probe_load() {
    local to=$target
    [[ -n ${5:-} ]] && to=${target%:*}:$5
    local args=(--connect "$to" --rate "$2" --duration "$1" --connections "$connections" --congestion "$cc" --json
        "${@:6}")
    (($3 > 0)) && args+=(--reply-bytes "$3")
    fabric_exec far "${rt_cmd[@]}" "$probe" load "${args[@]}" >"$4" 2>"$4.err" ||
        say "probe exit $? ($(head -c 300 "$4.err"))"
}

results=$work/results.jsonl
: >"$results"
# record KEY=VALUE...: one JSON line in $results (numbers stay numbers; probe=FILE).
record() {
    python3 - "$@" >>"$results" <<'EOF'
import json, sys
r = {}
for kv in sys.argv[1:]:
    k, v = kv.split("=", 1)
    if k == "probe":
        try:
            r[k] = json.load(open(v))
        except Exception:
            r[k] = {}
        continue
    if k == "uplink_classes":
        r[k] = {c: int(b) for c, b in (x.split("=") for x in v.split(",") if "=" in x)}
        continue
    try:
        r[k] = int(v)
    except ValueError:
        try:
            r[k] = float(v)
        except ValueError:
            r[k] = None if v in ("", "nan", "null") else v
print(json.dumps(r))
EOF
}

secs() { awk "BEGIN { print $1 }"; }

# measure SCENARIO REP: one measurement.
measure() {
    local s=$1 rep=$2 tag="$1-$2" train=1 d0 m0 m1 tm="" im load_extra=()
    case $s in
        floor) configure none off default off; train=0 ;;
        noqos) configure none off default off ;;
        cap) configure none on "$gso" off ;;
        cap-gso64k) configure none on default off ;;
        dscp) configure dscp off default CS1 ;;
        both) configure dscp on "$gso" CS1 ;;
        client-ef) configure dscp off default off; load_extra=("$port" --dscp EF) ;;
        server-ef) configure dscp off default off; load_extra=("$((port + 1))") ;;
    esac
    d0=$(uplink_drops)
    if ((train)); then
        start_training "$(secs "$warmup + $duration + 1")" "$tag"
        sleep "$warmup"
    fi
    m0=$(meter_read)
    probe_load "$duration" "$rate" 0 "$work/$tag.probe" "${load_extra[@]}"
    m1=$(meter_read)
    ((train)) && tm=$(meter_mbit "$m0" "$m1" 2)
    im=$(meter_mbit "$m0" "$m1" 3)
    ((train)) && wait "${train_pids[@]}"
    local caps
    read -r -a caps < <(node_caps)
    record scenario="$s" rep="$rep" train_mbit="$tm" inference_wire_mbit="$im" \
        train_bytes="$(meter_bytes "$m0" "$m1" 2)" inference_wire_bytes="$(meter_bytes "$m0" "$m1" 3)" \
        uplink_drops=$(($(uplink_drops) - d0)) uplink_classes="$(uplink_classes)" \
        cap_bytes="${caps[0]}" cap_overlimits="${caps[1]}" gso_max_size="${caps[2]}" probe="$work/$tag.probe"
    python3 - "$results" <<'EOF' >&2
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1]); p = r["probe"]
t = "-" if r["train_mbit"] is None else "%.1f Mbit/s" % r["train_mbit"]
print("bench: %-10s rep %d: p50 %s p99 %s max %s ms, ok %s/%s; training %s; uplink drops %d" % (r["scenario"],
      r["rep"], p.get("p50_ms"), p.get("p99_ms"), p.get("max_ms"), p.get("ok"), p.get("scheduled"), t,
      r["uplink_drops"]))
EOF
}

# lanes_caps JOB: "BYTES OVERLIMITS GSO" of the training job's HTB classes (from
# lanesctl status on each node) and the smallest gso_max_size of their fab0 now.
lanes_caps() {
    local node b=0 o=0 g=65536 x y z
    for node in train1 train2; do
        read -r x y < <(cluster_run_node "$node" env SLURMD_NODENAME="$node" "$lanesctl" --json status \
            --config "$LANES_CLUSTER_CONF" --node "$node" 2>/dev/null | python3 -c '
import json, sys
b = o = 0
for j in json.load(sys.stdin)["jobs"]:
    if j["job_id"] == int(sys.argv[1]):
        for d in j["devices"]:
            b += d.get("bytes", 0); o += d.get("overlimits", 0)
print(b, o)' "$1" 2>/dev/null || echo 0 0)
        z=$(fabric_exec "lanes-$node" ip -d link show dev fab0 | grep -o 'gso_max_size [0-9]*' | awk '{ print $2 }')
        b=$((b + ${x:-0})) o=$((o + ${y:-0}))
        ((${z:-65536} < g)) && g=$z
    done
    printf '%s %s %s\n' "$b" "$o" "$g"
}

# measure_lanes SCENARIO REP: the real plugins. lanes-idle: the inference job
# alone; lanes: with a 2-node training job submitted through Slurm.
measure_lanes() {
    local s=$1 rep=$2 tag="$1-$2" m0 m1 tm="" im id="" caps=(0 0 65536) saved=$target
    configure dscp off default off
    if [[ $s == lanes || $s == lanes-nocap ]]; then
        local class=training
        [[ $s == lanes-nocap ]] && class=batch
        id=$(lanes_cluster_submit -J "train-bench-$rep" -N2 -w train1,train2 --lanes-class=$class -t 10 \
            --export=ALL,BENCH_TRAIN_SECS="$(awk "BEGIN { printf \"%d\", $warmup + $duration + 4 }")" -o "$work/$tag.out" \
            "$work/train-lanes.sh") || { say "cannot submit the training job"; return 1; }
        cluster_wait_job "$id" RUNNING 60 >/dev/null || { say "training job $id did not start"; return 1; }
        # Both nodes' iperf3 connected (srun starts them some time after RUNNING).
        local _ n
        for _ in $(seq 300); do
            n=$(cat "$work/train-lanes-$id-"*.log 2>/dev/null | grep -c 'Connecting to host')
            ((n >= 2)) && break
            sleep 0.1
        done
        sleep "$warmup"
    fi
    if ((ipv6)); then target="[$(fabric_ip6 lanes-infer1)]:$lanes_port"; else target="$(fabric_ip lanes-infer1):$lanes_port"; fi
    m0=$(meter_read)
    probe_load "$duration" "$rate" 0 "$work/$tag.probe"
    m1=$(meter_read)
    target=$saved
    if [[ -n $id ]]; then
        read -r -a caps < <(lanes_caps "$id")
        tm=$(meter_mbit "$m0" "$m1" 2)
        cluster_wait_job "$id" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' 120 >/dev/null || say "training job $id did not end"
    fi
    im=$(meter_mbit "$m0" "$m1" 3)
    record scenario="$s" rep="$rep" train_mbit="$tm" inference_wire_mbit="$im" \
        train_bytes="$(meter_bytes "$m0" "$m1" 2)" inference_wire_bytes="$(meter_bytes "$m0" "$m1" 3)" \
        uplink_drops=0 uplink_classes="$(uplink_classes)" job="$id" \
        cap_bytes="${caps[0]}" cap_overlimits="${caps[1]}" gso_max_size="${caps[2]}" probe="$work/$tag.probe"
    python3 - "$results" <<'EOF' >&2
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1]); p = r["probe"]
t = "-" if r["train_mbit"] is None else "%.1f Mbit/s" % r["train_mbit"]
print("bench: %-10s rep %d: p50 %s p99 %s max %s ms, ok %s/%s; training %s (Slurm job %s, gso_max_size %s)" % (
      r["scenario"], r["rep"], p.get("p50_ms"), p.get("p99_ms"), p.get("max_ms"), p.get("ok"), p.get("scheduled"), t,
      r.get("job") or "-", r["gso_max_size"]))
EOF
}

# measure_borrow REP: Lanes settings; inference idle for $duration, then a burst.
measure_borrow() {
    local rep=$1 tag="borrow-$1" m0 m1 m2
    configure dscp on "$gso" CS1
    start_training "$(secs "$warmup + 2 * $duration + 1")" "$tag"
    sleep "$warmup"
    m0=$(meter_read)
    sleep "$duration"
    m1=$(meter_read)
    probe_load "$duration" "$burst_rate" "$burst_bytes" "$work/$tag.probe"
    m2=$(meter_read)
    wait "${train_pids[@]}"
    record scenario=borrow rep="$rep" train_mbit_idle="$(meter_mbit "$m0" "$m1" 2)" \
        train_mbit="$(meter_mbit "$m1" "$m2" 2)" inference_wire_mbit="$(meter_mbit "$m1" "$m2" 3)" \
        probe="$work/$tag.probe"
    python3 - "$results" <<'EOF' >&2
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1]); p = r["probe"]
print("bench: borrow     rep %d: training %.1f Mbit/s while inference idles, %.1f during a %.1f Mbit/s burst "
      "(p99 %s ms, ok %s/%s)" % (r["rep"], r["train_mbit_idle"], r["train_mbit"], r["inference_wire_mbit"],
                                p.get("p99_ms"), p.get("ok"), p.get("scheduled")))
EOF
}

started=$(date +%s)
say "fabric $FABRIC_PREFIX: uplink $link, FIFO $FABRIC__LIMIT frames; node caps $cap_pct% ($cap_bits bit/s," \
    "burst $cap_burst, limit $cap_limit), gso $gso; inference $rate req/s on $connections connections," \
    "${duration}s x $reps reps; probe ${rt_cmd[*]:-unprioritised}"
for ((rep = 1; rep <= reps; rep++)); do
    for s in "${scen_list[@]}"; do
        case $s in
            borrow) measure_borrow "$rep" ;;
            lanes | lanes-idle | lanes-nocap) measure_lanes "$s" "$rep" ;;
            *) measure "$s" "$rep" ;;
        esac
    done
done
elapsed=$(($(date +%s) - started))

[[ -n $json_out ]] || json_out=$work/bench.json
python3 - "$results" "$json_out" <<EOF
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
link = $link_bits / 1e6
# TCP goodput over Ethernet with timestamps: MTU - 52 of every MTU + 14 bytes
# (1448 of 1514 at MTU 1500).
eff = ($FABRIC__MTU - 52.0) / ($FABRIC__MTU + 14.0)
order = ["floor", "lanes-idle", "noqos", "lanes", "lanes-nocap", "cap", "cap-gso64k", "dscp", "both", "borrow", "client-ef",
         "server-ef"]
label = {"floor": "unloaded floor", "noqos": "no QoS (without Lanes)", "cap": "by hand: node cap only",
         "lanes-idle": "Lanes plugins, no training", "lanes": "WITH LANES (real plugins)",
         "lanes-nocap": "Lanes, training uncapped",
         "cap-gso64k": "by hand: cap, 64 KB GSO", "dscp": "by hand: DSCP + switch only",
         "both": "by hand: cap+GSO+DSCP", "borrow": "by hand: c+G+D, burst",
         "client-ef": "client marks requests EF", "server-ef": "server marks replies EF"}
def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None
# What training could have had: the link minus inference's wire bytes, as TCP goodput.
for r in rows:
    iw = r.get("inference_wire_mbit") or 0.0
    r["leftover_mbit"] = (link - iw) * eff
    if r.get("train_mbit") is not None:
        r["train_vs_leftover"] = r["train_mbit"] / r["leftover_mbit"]
    if r.get("train_mbit_idle") is not None:
        r["train_idle_vs_link"] = r["train_mbit_idle"] / (link * eff)
summary = {}
for s in order:
    rs = [r for r in rows if r["scenario"] == s]
    if not rs:
        continue
    p = lambda k: med([r["probe"].get(k) for r in rs])
    tot = lambda k: sum(r["probe"].get(k, 0) for r in rs)
    summary[s] = {"label": label[s], "reps": len(rs), "p50_ms": p("p50_ms"), "p99_ms": p("p99_ms"),
                  "p999_ms": p("p999_ms"), "max_ms": p("max_ms"), "ok": tot("ok"), "scheduled": tot("scheduled"),
                  "timeouts": tot("timeouts"), "errors": tot("errors"),
                  "train_mbit": med([r.get("train_mbit") for r in rs]),
                  "train_mbit_idle": med([r.get("train_mbit_idle") for r in rs]),
                  "inference_wire_mbit": med([r.get("inference_wire_mbit") for r in rs]),
                  "leftover_mbit": med([r["leftover_mbit"] for r in rs]),
                  "train_vs_leftover": med([r.get("train_vs_leftover") for r in rs]),
                  "uplink_drops": med([r.get("uplink_drops") for r in rs])}
floor = summary.get("floor", {}).get("p99_ms")
ratios = {}
if floor:
    for s, v in summary.items():
        if v["p99_ms"] is not None:
            v["p99_vs_floor"] = v["p99_ms"] / floor
    if "lanes" in summary:
        ratios["p99_with_lanes_vs_floor"] = summary["lanes"]["p99_vs_floor"]
        if summary.get("lanes-idle", {}).get("p99_ms"):
            ratios["p99_with_lanes_vs_lanes_idle"] = summary["lanes"]["p99_ms"] / summary["lanes-idle"]["p99_ms"]
    if "both" in summary:
        ratios["p99_by_hand_vs_floor"] = summary["both"]["p99_vs_floor"]
    if "noqos" in summary:
        ratios["p99_without_lanes_vs_floor"] = summary["noqos"]["p99_vs_floor"]
if "lanes" in summary and summary["lanes"]["train_vs_leftover"] is not None:
    ratios["training_with_lanes_vs_leftover"] = summary["lanes"]["train_vs_leftover"]
if "both" in summary and summary["both"]["train_vs_leftover"] is not None:
    ratios["training_by_hand_vs_leftover"] = summary["both"]["train_vs_leftover"]
if "borrow" in summary and summary["borrow"]["train_vs_leftover"] is not None:
    ratios["training_during_burst_vs_leftover"] = summary["borrow"]["train_vs_leftover"]
    ratios["training_idle_vs_link"] = med([r.get("train_idle_vs_link") for r in rows if r["scenario"] == "borrow"])
out = {"link_mbit": link, "mtu": $FABRIC__MTU, "rate": $rate, "connections": $connections, "cap_pct": $cap_pct, "cap_burst": $cap_burst,
       "cap_limit": $cap_limit, "gso": "$gso", "reps": $reps, "duration_s": $duration, "cc": "$cc",
       "elapsed_s": $elapsed, "summary": summary, "ratios": ratios, "runs": rows}
json.dump(out, open(sys.argv[2], "w"), indent=1)

fmt = lambda v, f="%.3f": "-" if v is None else f % v
print()
print("Inference latency across a %g Mbit/s shared uplink (FIFO of 1000 frames), %s req/s of 1 KB replies;" %
      (link, $rate))
print("medians of %d x %g s; node caps %s%% of the link per training host, gso %s." % ($reps, $duration, $cap_pct,
      "$gso"))
print()
hdr = "%-29s %7s %7s %8s %7s %9s %10s %7s %9s" % ("scenario", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "p99/floor",
                                               "train Mb/s", "% link", "% leftov.")
print(hdr)
print("-" * len(hdr))
for s, v in summary.items():
    t = v["train_mbit"]
    print("%-29s %7s %7s %8s %7s %9s %10s %7s %9s" % (v["label"], fmt(v["p50_ms"]), fmt(v["p99_ms"]),
          fmt(v["p999_ms"]), fmt(v["max_ms"]), fmt(v.get("p99_vs_floor"), "%.2fx"), fmt(t, "%.1f"),
          fmt(None if t is None else 100 * t / link, "%.0f%%"),
          fmt(None if v["train_vs_leftover"] is None else 100 * v["train_vs_leftover"], "%.0f%%")))
    if v["timeouts"] or v["errors"]:
        print("%-29s   ! %d timeouts, %d errors of %d requests" % ("", v["timeouts"], v["errors"], v["scheduled"]))
print("(leftover = what training could have had: (link - inference's wire rate) x %d/%d TCP goodput)" % (
    $FABRIC__MTU - 52, $FABRIC__MTU + 14))
if "borrow" in summary:
    b = summary["borrow"]
    print()
    print("Borrowing, by hand (cap+GSO+DSCP): training %s Mbit/s while inference idles (%s of the link's goodput); during a "
          "%s Mbit/s inference burst %s Mbit/s (%s of what the burst leaves), burst p99 %s ms." % (
              fmt(b["train_mbit_idle"], "%.1f"), fmt(ratios.get("training_idle_vs_link") and
                                                      100 * ratios["training_idle_vs_link"], "%.0f%%"),
              fmt(b["inference_wire_mbit"], "%.1f"), fmt(b["train_mbit"], "%.1f"),
              fmt(b["train_vs_leftover"] and 100 * b["train_vs_leftover"], "%.0f%%"), fmt(b["p99_ms"])))
if ratios:
    print()
    print("RATIOS (this run)")
    if "p99_with_lanes_vs_floor" in ratios:
        print("  inference p99 with Lanes / floor     %7.2fx  (%s / %s ms; goal <= 1.5x; real plugins)" % (
            ratios["p99_with_lanes_vs_floor"], fmt(summary["lanes"]["p99_ms"]), fmt(floor)))
    if "p99_with_lanes_vs_lanes_idle" in ratios:
        print("  ... / Lanes plugins without training %7.2fx  (%s / %s ms)" % (
            ratios["p99_with_lanes_vs_lanes_idle"], fmt(summary["lanes"]["p99_ms"]),
            fmt(summary["lanes-idle"]["p99_ms"])))
    if "p99_by_hand_vs_floor" in ratios:
        print("  by hand (cap+GSO+DSCP) p99 / floor   %7.2fx  (%s / %s ms; comparison)" % (
            ratios["p99_by_hand_vs_floor"], fmt(summary["both"]["p99_ms"]), fmt(floor)))
    if "p99_without_lanes_vs_floor" in ratios:
        print("  inference p99 without Lanes / floor  %7.1fx  (%s / %s ms)" % (
            ratios["p99_without_lanes_vs_floor"], fmt(summary["noqos"]["p99_ms"]), fmt(floor)))
    if "training_with_lanes_vs_leftover" in ratios:
        print("  training with Lanes / leftover       %7.1f%%  (%.1f / %.1f Mbit/s; goal >= 90%%; real plugins)" % (
            100 * ratios["training_with_lanes_vs_leftover"], summary["lanes"]["train_mbit"],
            summary["lanes"]["leftover_mbit"]))
    if "training_by_hand_vs_leftover" in ratios:
        print("  by hand: training / leftover         %7.1f%%  (%.1f / %.1f Mbit/s; comparison)" % (
            100 * ratios["training_by_hand_vs_leftover"], summary["both"]["train_mbit"],
            summary["both"]["leftover_mbit"]))
print()
print("bench: %d s of measurements" % $elapsed)
EOF
say "results in $json_out"

if [[ -n $plot_out ]]; then
    plot_chart "$json_out" "$plot_out" || die "cannot draw $plot_out"
    say "chart in $plot_out"
fi
exit 0
