#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/fabric.sh as a library: the topology, attaching a namespace made by
# someone else (the cluster harness's way), DSCP classes at the switch, the
# by-hand node cap and mark, GSO size, and a teardown that leaves nothing.
set -uo pipefail
if (($(id -u) != 0)); then
    echo "SKIP: needs root (network namespaces, tc, nft)"
    exit 77
fi
src=${LANES_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${LANES_BUILDDIR:-.}
probe=$build/bench/inference_probe
[[ -x $probe ]] || { echo "FAIL: $probe not built"; exit 1; }
# shellcheck source=bench/fabric.sh
source "$src/bench/fabric.sh"

fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A namespace that is not the fabric's: fabric_destroy must not delete it.
ext=""
for _ in 1 2 3 4 5; do
    cand=lfx$$r$RANDOM
    if ip netns add "$cand" 2>/dev/null; then ext=$cand; break; fi
done
[[ -n $ext ]] || { echo "FAIL: cannot create a network namespace"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lanes-fabric.XXXXXX")
cleanup() {
    fabric_destroy
    ip netns delete "$ext" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

FABRIC_RATE=100mbit FABRIC_HOSTS="infer1:infer" fabric_create || { echo "FAIL: fabric_create"; exit 1; }
prefix=$FABRIC_PREFIX
ip -n "$ext" link set lo up
fabric_attach "$ext" train "$FABRIC_SUBNET.21" "$FABRIC_SUBNET6::21" fab0 node7 && ok "attach an outside namespace" ||
    bad "fabric_attach"
[[ $(fabric_role node7) == train && $(fabric_ns node7) == "$ext" && $(fabric_ip node7) == "$FABRIC_SUBNET.21" ]] &&
    ok "member lookups" || bad "member lookups: $(fabric_role node7) $(fabric_ns node7) $(fabric_ip node7)"
[[ $(fabric_members train) == node7 && $(fabric_members infer) == infer1 ]] && ok "members by role" ||
    bad "members by role: $(fabric_members train | tr '\n' ' ')"
fabric_attach "$ext" train "$FABRIC_SUBNET.22" "" fab1 node7 2>/dev/null && bad "a duplicate member name was accepted" ||
    ok "duplicate member name refused"
fabric_attach "$ext" spine "$FABRIC_SUBNET.23" 2>/dev/null && bad "an unknown role was accepted" || ok "unknown role refused"
tso=$(fabric_exec node7 ethtool -k fab0 | awk -F': ' '/^tcp-segmentation-offload/ { print $2 }')
[[ $tso == off* ]] && ok "links carry frames (TSO off)" || bad "TSO on fab0: $tso"

# Inference over IPv4 and IPv6 across the uplink, in both directions of roles.
fabric_spawn infer1 "$tmp/serve.log" "$probe" serve --listen '[::]:7100' --exit-after 60
srv=$FABRIC_SPAWNED
for _ in $(seq 100); do grep -q 'serving on' "$tmp/serve.log" 2>/dev/null && break; sleep 0.05; done
for t in "$(fabric_ip infer1):7100" "[$(fabric_ip6 infer1)]:7100"; do
    if fabric_exec far "$probe" load --connect "$t" --rate 100 --duration 1 --json >"$tmp/l.json" &&
        python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j["ok"]==j["scheduled"]==100 else 1)' "$tmp/l.json"; then
        ok "far side -> infer1 over $t"
    else
        bad "far side -> infer1 over $t: $(cat "$tmp/l.json")"
    fi
done
fabric_exec node7 "$probe" load --connect "$(fabric_ip infer1):7100" --rate 50 --duration 0.5 >/dev/null &&
    ok "attached member reaches infer1" || bad "attached member cannot reach infer1"

# DSCP at the switch: replies marked by the server land in the class of their mark.
class_bytes() { fabric_uplink_stats sw | awk -v c="$1" '$1 == c { print $2 }'; }
fabric_qos dscp || bad "fabric_qos dscp"
[[ $FABRIC_QOS == dscp ]] || bad "FABRIC_QOS is '$FABRIC_QOS'"
fabric_qos bogus 2>/dev/null && bad "fabric_qos accepted 'bogus'" || ok "fabric_qos refuses an unknown mode"
for mark in EF CS1 none; do
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
    args=()
    [[ $mark != none ]] && args=(--dscp "$mark")
    fabric_spawn infer1 "$tmp/serve.log" "$probe" serve --listen '[::]:7100' --exit-after 60 "${args[@]}"
    srv=$FABRIC_SPAWNED
    sleep 0.3
    fabric_qos dscp  # fresh counters
    fabric_exec far "$probe" load --connect "$(fabric_ip infer1):7100" --rate 200 --duration 0.5 --reply-bytes 1000 \
        >/dev/null || bad "load with mark $mark"
    fabric_exec far "$probe" load --connect "[$(fabric_ip6 infer1)]:7100" --rate 200 --duration 0.5 \
        --reply-bytes 1000 >/dev/null || bad "IPv6 load with mark $mark"
    case $mark in EF) want=1:10 ;; CS1) want=1:30 ;; none) want=1:20 ;; esac
    # 200 replies of 1000 bytes: the right class carries them, the others (nearly) nothing.
    got=$(class_bytes "$want")
    others=$(fabric_uplink_stats sw | awk -v c="$want" '$1 != c { s += $2 } END { print s + 0 }')
    if ((got >= 200 * 1000 && others < 20000)); then
        ok "replies marked $mark go to class $want ($got bytes; others $others)"
    else
        bad "mark $mark: class $want has ${got:-0} bytes, the others $others ($(fabric_uplink_stats sw | tr '\n' ';'))"
    fi
done

# The by-hand node cap and mark on the attached member.
fabric_spawn far "$tmp/iperf-s.log" timeout 30 iperf3 -s -p 5301
sleep 0.3
fabric_node_cap node7 20mbit || bad "fabric_node_cap"
fabric_mark node7 CS1 || bad "fabric_mark"
fabric_qos dscp
fabric_exec node7 timeout 10 iperf3 -c "$(fabric_ip far)" -p 5301 -t 2 -J >"$tmp/cap.json" 2>&1
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bytes"])' "$tmp/cap.json" 2>/dev/null)
read -r cap_rate cap_bytes cap_over < <(fabric_exec node7 tc -s class show dev fab0 classid 1:10 |
    awk '/rate/ && !r { for (i = 1; i < NF; i++) if ($i == "rate") r = $(i + 1) }
         /Sent/ { gsub(/[(),]/, " "); b = $2; o = $9 } END { print r, b + 0, o + 0 }')
# The cap's class has the rate, carried every byte that got across, and held the flow back.
if [[ $cap_rate == 20Mbit ]] && ((${got:-0} > 0 && cap_bytes >= got && cap_over > 0)); then
    ok "node cap 20mbit carries and throttles the flow ($got bytes across, class $cap_bytes bytes, $cap_over overlimits)"
else
    bad "node cap 20mbit: rate ${cap_rate:-none}, ${got:-no} bytes across, class $cap_bytes bytes, $cap_over overlimits"
fi
scav=$(class_bytes 1:30)
((${got:-0} > 0 && scav >= got)) && ok "CS1-marked training lands in the scavenger class ($scav bytes)" ||
    bad "scavenger class has ${scav:-0} bytes"
fabric_node_cap node7 off && [[ -z $(fabric_exec node7 tc qdisc show dev fab0 | grep htb) ]] &&
    ok "node cap off" || bad "node cap not removed"
fabric_node_cap node7 off && ok "node cap off twice is fine" || bad "node cap off twice failed"
fabric_mark node7 off && fabric_mark node7 off && ! fabric_exec node7 nft list table inet fabric_mark >/dev/null 2>&1 &&
    ok "mark off (twice)" || bad "mark not removed"
fabric_mark node7 XX9 2>/dev/null && bad "bad DSCP accepted" || ok "bad DSCP refused"

# GSO size.
fabric_gso node7 4500 && [[ $(fabric_exec node7 ip -d link show fab0 | grep -o 'gso_max_size [0-9]*') == "gso_max_size 4500" ]] &&
    ok "gso_max_size 4500" || bad "fabric_gso 4500"
fabric_gso node7 default && [[ $(fabric_exec node7 ip -d link show fab0 | grep -o 'gso_max_size [0-9]*') == "gso_max_size 65536" ]] &&
    ok "gso_max_size back to default" || bad "fabric_gso default"
fabric_gso node7 100 2>/dev/null && bad "gso 100 accepted" || ok "gso 100 refused"

# A host added later, a member's downlink capped, and the bulk fabric (issue
# 21's demo scenarios): the bulk NICs reach the far side's bulk0 through the
# bulk uplink, whose FIFO counts the bytes; the main uplink does not see them.
fabric_spawn far "$tmp/serve-far.log" "$probe" serve --listen '[::]:7200' --exit-after 60
for _ in $(seq 100); do grep -q 'serving on' "$tmp/serve-far.log" 2>/dev/null && break; sleep 0.05; done
fabric_add_host store host 30 && [[ $(fabric_ip store) == "$FABRIC_SUBNET.30" ]] &&
    fabric_exec store "$probe" load --connect "$(fabric_ip far):7200" --rate 50 --duration 0.5 >/dev/null &&
    ok "fabric_add_host: a member at .30" || bad "fabric_add_host"
port_qdisc() { fabric_exec sw tc qdisc show dev "${FABRIC__PORT[infer1]}"; }
fabric_port_cap infer1 50mbit && grep -q 'htb' <<<"$(port_qdisc)" && ok "downlink of infer1 capped" ||
    bad "fabric_port_cap: $(port_qdisc)"
fabric_port_cap infer1 off && ! grep -q 'htb' <<<"$(port_qdisc)" && ok "downlink cap off" || bad "downlink cap not removed"
if fabric_bulk_create node7 store; then
    ok "fabric_bulk_create"
    [[ $(fabric_bulk_ip node7) == "198.19.${FABRIC_SUBNET##*.}.21" ]] && ok "bulk address of node7" ||
        bad "bulk address of node7: $(fabric_bulk_ip node7)"
    main0=$(fabric_uplink_stats sw | awk '{ s += $2 } END { print s + 0 }')
    fabric_exec node7 "$probe" load --connect "$(fabric_bulk_ip far):7200" --rate 200 --duration 1 >/dev/null &&
        ok "node7 -> far over bulk0" || bad "node7 cannot reach the far side's bulk0"
    bulk=$(fabric_bulk_stats | awk '{ s += $2 } END { print s + 0 }')
    main=$(($(fabric_uplink_stats sw | awk '{ s += $2 } END { print s + 0 }') - main0))
    ((bulk >= 200 * 256 && main < 200 * 256)) && ok "the bulk uplink carried it ($bulk bytes; main uplink $main)" ||
        bad "bulk uplink $bulk bytes, main uplink $main"
else
    bad "fabric_bulk_create"
fi

# Teardown: our namespaces and processes are gone, the outside namespace stays
# (without its fabric interface).
fabric_destroy
left=$(ip netns list | awk -v p="$prefix" 'index($1, p) == 1 { print $1 }')
[[ -z $left ]] && ok "fabric_destroy deleted every namespace" || bad "left behind: $left"
if [[ -e /run/netns/$ext ]] && ! ip -n "$ext" link show fab0 >/dev/null 2>&1 &&
    ! ip -n "$ext" link show bulk0 >/dev/null 2>&1; then
    ok "the attached namespace stays, without fab0 and bulk0"
else
    bad "attached namespace state after destroy"
fi
kill -0 "$srv" 2>/dev/null && bad "probe server still running" || ok "processes in the fabric stopped"
fabric_destroy && ok "fabric_destroy twice is fine" || bad "fabric_destroy twice failed"
((fails == 0))
