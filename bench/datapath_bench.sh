#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/datapath_bench.sh: the node datapath at line rate. TCP throughput and
# CPU per Gbit/s out of one NIC with N jobs' HTB classes and nftables elements
# installed by the real NodeShaper (bench/datapath_shaper), side by side with
# the same link and no Lanes objects at all.
#
#   bench/datapath_bench.sh [--jobs N] [--senders "1 8"] [--streams S]
#                           [--seconds T] [--rounds R] [--perf] [--out DIR]
#
# The link: a veth pair between two private network namespaces (one TX/RX
# queue per CPU, TSO/GSO on as on a NIC), 10.231.0.1 -> 10.231.0.2; the
# Lanes side declares it 100 Gbit/s (every job: rate 50 Mbit/s, ceil 100 %,
# DSCP CS1, so no cap binds and what is measured is the cost of the objects).
# Per round, for each sender count K: K iperf3 clients (S streams each,
# T seconds, client k pinned to CPU k mod ncpu) to K iperf3 servers, once in
# plain cgroups with no Lanes objects on the link ("none"), once each started
# in one of the last K jobs' cgroups with all N jobs installed ("lanes").
# Rounds alternate which variant goes first, so the machine's load hits both.
# Two more rows per round: "mq" (no Lanes; an mq root with the system's
# default qdisc per TX queue, what a multi-queue NIC has out of the box) and
# "htb" (Lanes' HTB root and N classes with its nftables table deleted, all
# traffic in the default class: the classifier's share of the cost).
#
# Figures per run: Gbit/s received (iperf3's sum_received); CPU: the
# senders' and receivers' cgroup CPU time (cpu.stat usage_usec: process
# context, including the softirq work done on their way out) plus the
# machine's softirq time (/proc/stat; the veth receive path run by ksoftirqd
# or at interrupt exit; other load of the machine lands there too), as
# CPU-seconds per Gbit (= cores busy per Gbit/s). Then the median of the
# rounds' ratios lanes / none. With --perf, the last lanes phase of the
# largest K is also sampled with perf record -a (whole machine), top symbols
# printed. The root qdisc's counters (requeues, overlimits, drops) and the
# share of bytes that went through the jobs' classes are printed per lanes
# run: that the traffic was classified at all is checked, not assumed.
#
# Environment: LANES_BUILD_DIR (default ./build) holds the build. Needs root,
# iperf3, nsenter, taskset, jq. Exit: 0 done (whatever the figures), 1 error,
# 77 not root or a tool missing.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)
build=${LANES_BUILD_DIR:-$src/build}
jobs=1000 senders="1 8" streams=2 seconds=6 rounds=2 perf=0 out=""
while (($#)); do
    case $1 in
        --jobs) jobs=$2; shift ;;
        --senders) senders=$2; shift ;;
        --streams) streams=$2; shift ;;
        --seconds) seconds=$2; shift ;;
        --rounds) rounds=$2; shift ;;
        --perf) perf=1 ;;
        --out) out=$2; shift ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "datapath_bench: unknown option '$1'" >&2; exit 1 ;;
    esac
    shift
done
say() { printf 'datapath_bench: %s\n' "$*" >&2; }
for v in jobs streams seconds rounds; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { say "error: --$v '${!v}' is not a positive number"; exit 1; }
done
maxk=0
for k in $senders; do
    [[ $k =~ ^[1-9][0-9]*$ ]] || { say "error: --senders '$senders': '$k' is not a positive number"; exit 1; }
    ((k > maxk)) && maxk=$k
done
((maxk > 0 && maxk <= jobs)) || { say "error: --senders needs 1..--jobs senders"; exit 1; }
((EUID == 0)) || { echo "SKIP: datapath_bench needs root"; exit 77; }
for t in iperf3 nsenter taskset jq tc nft; do
    command -v "$t" >/dev/null || { echo "SKIP: datapath_bench needs $t"; exit 77; }
done
shaper_bin=$build/bench/datapath_shaper
[[ -x $shaper_bin ]] || { say "error: no $shaper_bin (build first: make bench/datapath_shaper)"; exit 1; }
cg2=$(findmnt -n -t cgroup2 -o TARGET | head -1)
[[ -n $cg2 ]] || { say "error: no cgroup2 mount"; exit 1; }
[[ -n $out ]] || out=$(mktemp -d "${TMPDIR:-/tmp}/lanes-datapath.XXXXXX")
mkdir -p "$out" || exit 1

ncpu=$(nproc)
P=dp$$
nsa=${P}a nsb=${P}b
base=$cg2/lanes-datapath-$$
state=$out/state
declare -a PIDS=()
shaper_pid="" shaper_in=""
cleanup() {
    local p
    [[ -n $shaper_in ]] && eval "exec $shaper_in>&-"
    [[ -n $shaper_pid ]] && wait "$shaper_pid" 2>/dev/null
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    ip netns del "$nsa" 2>/dev/null
    ip netns del "$nsb" 2>/dev/null
    if [[ -d $base ]]; then
        find "$base" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
        rmdir "$base" 2>/dev/null
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
ina() { nsenter --net="/run/netns/$nsa" -- "$@"; }
inb() { nsenter --net="/run/netns/$nsb" -- "$@"; }

ip netns add "$nsa" && ip netns add "$nsb" || exit 1
ip link add "${P}x" numtxqueues "$ncpu" numrxqueues "$ncpu" type veth \
    peer name "${P}y" numtxqueues "$ncpu" numrxqueues "$ncpu" || exit 1
ip link set "${P}x" netns "$nsa" name dp0 && ip link set "${P}y" netns "$nsb" name dp1 || exit 1
ina ip link set lo up && inb ip link set lo up && ina ip link set dp0 up && inb ip link set dp1 up || exit 1
ina ip addr add 10.231.0.1/24 dev dp0 && inb ip addr add 10.231.0.2/24 dev dp1 || exit 1
mkdir -p "$base/srv" || exit 1
for ((k = 0; k < maxk; k++)); do mkdir -p "$base/plain$k" || exit 1; done

# One iperf3 server per sender, in one cgroup (their CPU is counted too).
for ((k = 0; k < maxk; k++)); do
    sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$base/srv" \
        nsenter --net="/run/netns/$nsb" -- iperf3 -s -p $((5201 + k)) >"$out/server$k.log" 2>&1 &
    PIDS+=($!)
done
for ((i = 0; i < 50; i++)); do
    n=$(inb ss -Hltn 2>/dev/null | grep -c ':52[0-9][0-9] ')
    ((n >= maxk)) && break
    sleep 0.1
done

usage_usec() { awk '$1 == "usage_usec" { print $2 }' "$1/cpu.stat"; }
# softirq + total busy jiffies of the machine (USER_HZ).
softirq_ticks() { awk '$1 == "cpu" { print $8 }' /proc/stat; }

# run_phase NAME K CGDIR...: K clients, client k in CGDIR[k]; prints
# "gbps cpu_s softirq_s".
run_phase() {
    local name=$1 k=$2 i cpu0=0 cpu1=0 si0 si1 hz
    shift 2
    local -a dirs=("$@") cps=()
    hz=$(getconf CLK_TCK)
    for ((i = 0; i < k; i++)); do cpu0=$((cpu0 + $(usage_usec "${dirs[i]}"))); done
    cpu0=$((cpu0 + $(usage_usec "$base/srv")))
    si0=$(softirq_ticks)
    for ((i = 0; i < k; i++)); do
        sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "${dirs[i]}" \
            timeout $((seconds + 20)) taskset -c $((i % ncpu)) nsenter --net="/run/netns/$nsa" -- \
            iperf3 -c 10.231.0.2 -p $((5201 + i)) -P "$streams" -t "$seconds" -J >"$out/$name-c$i.json" 2>"$out/$name-c$i.err" &
        cps+=($!)
    done
    for i in "${cps[@]}"; do wait "$i"; done
    si1=$(softirq_ticks)
    for ((i = 0; i < k; i++)); do cpu1=$((cpu1 + $(usage_usec "${dirs[i]}"))); done
    cpu1=$((cpu1 + $(usage_usec "$base/srv")))
    local bps=0 b
    for ((i = 0; i < k; i++)); do
        b=$(jq -r '.end.sum_received.bits_per_second // 0' "$out/$name-c$i.json" 2>/dev/null) || b=0
        [[ $b == 0 ]] && say "warning: $name client $i reported nothing ($(head -c 200 "$out/$name-c$i.err"))"
        bps=$(awk -v a="$bps" -v b="$b" 'BEGIN { printf "%.0f", a + b }')
    done
    awk -v bps="$bps" -v c=$((cpu1 - cpu0)) -v s=$((si1 - si0)) -v hz="$hz" \
        'BEGIN { printf "%.3f %.3f %.3f\n", bps / 1e9, c / 1e6, s / hz }'
}

shaper_up() {
    local line
    mkdir -p "$state"
    coproc SHAPER { nsenter --net="/run/netns/$nsa" -- "$shaper_bin" --dev dp0 --jobs "$jobs" \
        --senders "$maxk" --state "$state" --cgroot "$base/jobs" 2>"$out/shaper.err"; }
    shaper_pid=$SHAPER_PID
    shaper_in=${SHAPER[1]}
    SENDER_DIRS=()
    local t0=$SECONDS
    while read -r -t 600 line <&"${SHAPER[0]}"; do
        case $line in
            sender\ *) SENDER_DIRS+=("$cg2/${line#sender }") ;;
            ready*) say "installed: $line ($((SECONDS - t0)) s)"; [[ $line == *" 0 failed" ]] || return 1; break ;;
        esac
    done
    # The cgroup the shaper reports is relative to the cgroup2 mount or absolute.
    local i
    for i in "${!SENDER_DIRS[@]}"; do
        [[ -d ${SENDER_DIRS[i]} ]] || SENDER_DIRS[i]=${SENDER_DIRS[i]#"$cg2"}
        [[ -d ${SENDER_DIRS[i]} ]] || { say "error: no sender cgroup ${SENDER_DIRS[i]}"; return 1; }
    done
    ((${#SENDER_DIRS[@]} == maxk))
}
shaper_down() {
    eval "exec $shaper_in>&-"
    shaper_in=""
    wait "$shaper_pid"
    local rc=$?
    shaper_pid=""
    ((rc == 0)) || say "warning: datapath_shaper exited $rc: $(tail -3 "$out/shaper.err")"
}

# Root qdisc counters and the bytes of the default (unclassified) class.
qdisc_line() {
    ina tc -s -j qdisc show dev dp0 root | jq -r '.[0] | "\(.kind) bytes \(.bytes) pkts \(.packets) drops \(.drops) overlimits \(.overlimits) requeues \(.requeues)"'
}
classified_share() {
    ina tc -s class show dev dp0 | awk '
        $1 == "class" { h = $3; p = ($4 == "parent" ? $5 : "root") }
        $1 == "Sent" && h != "" { if (h ~ /:fffe$/) d += $2; else if (p != "root" && h !~ /:1$/) { j += $2; n++ }; h = "" }
        END { printf "%d job classes carried %.0f bytes, unclassified class %.0f bytes\n", n, j, d }'
}

results=$out/results.txt
: >"$results"
say "veth pair, $ncpu CPUs, $jobs jobs, senders '$senders' x $streams streams, $seconds s, $rounds rounds; out $out"
read -r load0 _ </proc/loadavg
for ((r = 1; r <= rounds; r++)); do
    order="none lanes"
    ((r % 2 == 0)) && order="lanes none"
    for variant in $order; do
        if [[ $variant == lanes ]]; then
            shaper_up || { say "error: installing $jobs jobs failed: $(tail -3 "$out/shaper.err")"; exit 1; }
            for k in $senders; do
                # The last K jobs are the senders.
                read -r g c s < <(run_phase "r$r-lanes-k$k" "$k" "${SENDER_DIRS[@]: -$k}")
                q=$(qdisc_line) cl=$(classified_share)
                echo "$r $k lanes $g $c $s" >>"$results"
                say "round $r K=$k lanes: $g Gbit/s, cgroup CPU $c s, softirq $s s; $q; $cl"
            done
            if ((perf && r == rounds)) && command -v perf >/dev/null; then
                k=$maxk
                (sleep 1; perf record -a -g -o "$out/perf.data" -- sleep $((seconds / 2 > 1 ? seconds / 2 : 1)) >/dev/null 2>&1) &
                pp=$!
                run_phase "perf-lanes-k$k" "$k" "${SENDER_DIRS[@]: -$k}" >/dev/null
                wait "$pp"
                perf report -i "$out/perf.data" --no-children --comms iperf3,ksoftirqd/0,ksoftirqd/1,ksoftirqd/2,ksoftirqd/3 --sort sym --stdio 2>/dev/null |
                    grep -E '^ +[0-9]' | head -25 >"$out/perf-top.txt"
                say "perf, lanes K=$k (iperf3 and ksoftirqd only, top symbols):"
                sed 's/^/    /' "$out/perf-top.txt" >&2
            fi
            # The same HTB root and classes without the nftables classifier
            # (table deleted: every packet goes to the default class).
            ina nft delete table inet lanes || say "warning: could not delete the nft table"
            for k in $senders; do
                read -r g c s < <(run_phase "r$r-htb-k$k" "$k" "${SENDER_DIRS[@]: -$k}")
                echo "$r $k htb $g $c $s" >>"$results"
                say "round $r K=$k htb (no nft): $g Gbit/s, cgroup CPU $c s, softirq $s s; $(classified_share)"
            done
            shaper_down
        else
            plain=()
            for ((i = 0; i < maxk; i++)); do plain+=("$base/plain$i"); done
            for root in noqueue mq; do
                # mq: one default qdisc per TX queue (what a multi-queue NIC has
                # without Lanes); noqueue: the veth's own default, no qdisc at all.
                [[ $root == mq ]] && { ina tc qdisc replace dev dp0 root handle 1: mq || continue; }
                for k in $senders; do
                    read -r g c s < <(run_phase "r$r-$root-k$k" "$k" "${plain[@]:0:$k}")
                    name=none
                    [[ $root == mq ]] && name=mq
                    echo "$r $k $name $g $c $s" >>"$results"
                    say "round $r K=$k $name: $g Gbit/s, cgroup CPU $c s, softirq $s s; root qdisc $(ina tc qdisc show dev dp0 root | awk '{print $2; exit}')"
                done
                [[ $root == mq ]] && ina tc qdisc del dev dp0 root
            done
        fi
    done
done
read -r load1 _ </proc/loadavg

echo
echo "datapath_bench: veth, $ncpu CPUs, $jobs jobs installed by NodeShaper vs none; $streams TCP streams per sender, ${seconds} s; load average $load0 -> $load1"
printf '%-5s %-3s %-6s %9s %11s %11s %14s\n' round K root Gbit/s "cgroup CPU" "softirq" "CPU-s per Gbit"
awk '{ printf "%-5s %-3s %-6s %9.2f %9.2f s %9.2f s %14.3f\n", $1, $2, $3, $4, $5, $6, ($4 > 0 ? ($5 + $6) / ($4 * '"$seconds"') : 0) }' "$results"
echo
for k in $senders; do
    for v in lanes htb mq; do
        awk -v k="$k" -v v="$v" -v T="$seconds" '
            $2 == k { g[$1 "," $3] = $4; c[$1 "," $3] = ($4 > 0 ? ($5 + $6) / ($4 * T) : 0); rs[$1] = 1 }
            function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
            END {
                n = 0
                for (r in rs) if (g[r ",none"] > 0 && g[r "," v] > 0) { n++; tr[n] = g[r "," v] / g[r ",none"]; cr[n] = c[r "," v] / c[r ",none"]
                    ts = ts sprintf(" %.2f", tr[n]); cs = cs sprintf(" %.2f", cr[n]) }
                if (n == 0) exit
                printf "K=%d senders, %-5s / none: throughput median x%.2f (rounds:%s), CPU per Gbit median x%.2f (rounds:%s)\n", k, v, med(tr, n), ts, med(cr, n), cs
            }' "$results"
    done
done
