# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# bench/leafspine.sh: a routed leaf-spine fabric in network namespaces, with
# ECMP between the leaves and DSCP-aware, oversubscribed uplinks, for the
# fabric-scale benchmark (issue 24). Source it; every function is prefixed ls_.
#
#   source bench/leafspine.sh
#   ls_create                         # 2 leaves, 2 spines (LS_LEAVES, LS_SPINES)
#   ls_host store 2 9                 # a namespace of its own on leaf 2, .9
#   ls_attach NETNS 1 11 train1       # plug an existing namespace (a slurmd's)
#   ls_exec store iperf3 -s ...
#   ls_uplink_stats                   # packets per uplink, bytes per DSCP class
#   ls_queue_sample FILE SECONDS &    # backlog of the uplink classes, sampled
#   ls_destroy
#
# Topology (P = per-run prefix; L = leaf 1..LS_LEAVES, S = spine 1..LS_SPINES):
#
#   netns P"sp"S: a router; dnL -> leaf L (10.41.L.4S+2/30); routes
#                 10.40.L.0/24 via leaf L
#        |  ... one link per (leaf, spine): THE OVERSUBSCRIBED UPLINKS, shaped
#        |      at both ends to LS_UPLINK_RATE with DSCP classes (see ls_qos)
#   netns P"lf"L: a router; bridge br0 10.40.L.1/24 (the hosts' gateway),
#                 upS -> spine S (10.41.L.4S+1/30); every other leaf's /24
#                 through a multipath route over all spines (ECMP, L4 hash:
#                 fib_multipath_hash_policy=1, so TCP flows spread)
#        |
#   hosts: fab0 10.40.L.N/24, route 10.40.0.0/16 via 10.40.L.1
#
# A host sends at its veth's speed; its leaf forwards to the spines at
# LS_SPINES x LS_UPLINK_RATE: with 4 hosts a leaf, an oversubscribed fabric.
# Links carry frames (TSO off, GSO on; as bench/fabric.sh).
#
# ls_qos at every uplink egress (leaf upS and spine dnL): HTB rate
# LS_UPLINK_RATE; 1:10 priority (DSCP AF4x, EF, CS4-CS7: dsfield top bit),
# 1:20 best effort (default), 1:30 scavenger (CS1, LE); each a pfifo of
# LS_LIMIT frames. Class 1:10 is served first, 1:30 last (HTB prio 0/1/2).
#
# Settings: LS_LEAVES (2), LS_SPINES (2), LS_UPLINK_RATE (tc syntax, 100mbit),
# LS_LIMIT (1000 frames), LS_MTU (1500).

if [[ -n ${LS__LOADED:-} ]]; then
    return 0
fi
LS__LOADED=1

LS_PREFIX=""
declare -gA LS__NS=()  # member -> namespace
declare -gA LS__IP=()  # member -> address
declare -ga LS__OWNED=()

ls__say() { printf 'leafspine: %s\n' "$*" >&2; }
ls__fail() { ls__say "error: $*"; return 1; }
ls__in() { nsenter --net="/run/netns/$1" -- "${@:2}"; }

ls_ns() { if [[ -n ${LS__NS[$1]:-} ]]; then printf "%s\n" "${LS__NS[$1]}"; else ls__fail "no member '$1'"; fi; }
ls_ip() { if [[ -n ${LS__IP[$1]:-} ]]; then printf "%s\n" "${LS__IP[$1]}"; else ls__fail "no member '$1'"; fi; }
ls_exec() {
    local ns
    ns=$(ls_ns "$1") || return 1
    nsenter --net="/run/netns/$ns" -- "${@:2}"
}
ls_spawn() {  # ls_spawn NAME LOG CMD...: PID in LS_SPAWNED
    local ns
    ns=$(ls_ns "$1") || return 1
    nsenter --net="/run/netns/$ns" -- "${@:3}" >"$2" 2>&1 </dev/null &
    LS_SPAWNED=$!  # read by the caller
    export LS_SPAWNED
}

ls__netns() {  # ls__netns NAME: a new namespace we own
    ip netns add "$1" || { ls__fail "cannot create netns $1"; return 1; }
    LS__OWNED+=("$1")
    ls__in "$1" ip link set lo up
}

ls__frames() {  # ls__frames NS DEV
    ls__in "$1" ip link set dev "$2" mtu "${LS_MTU:-1500}" up || return 1
    ls__in "$1" ethtool -K "$2" tso off >/dev/null 2>&1 || ls__fail "cannot turn TSO off on $2 (ethtool?)"
}

# ls__veth NS_A DEV_A NS_B DEV_B: a veth pair between two namespaces.
ls__veth() {
    local a=v$RANDOM$RANDOM b=w$RANDOM$RANDOM
    ip link add "${a:0:15}" type veth peer name "${b:0:15}" || return 1
    ip link set "${a:0:15}" netns "$1" name "$2" && ip link set "${b:0:15}" netns "$3" name "$4" || return 1
    ls__frames "$1" "$2" && ls__frames "$3" "$4"
}

ls_create() {
    local L S M nh
    LS_PREFIX=ls$(($$ % 100000))
    local leaves=${LS_LEAVES:-2} spines=${LS_SPINES:-2}
    for ((S = 1; S <= spines; S++)); do
        ls__netns "${LS_PREFIX}sp$S" || return 1
        LS__NS[sp$S]=${LS_PREFIX}sp$S
        ls__in "${LS_PREFIX}sp$S" sysctl -qw net.ipv4.ip_forward=1 || return 1
    done
    for ((L = 1; L <= leaves; L++)); do
        local lf=${LS_PREFIX}lf$L
        ls__netns "$lf" || return 1
        LS__NS[lf$L]=$lf
        ls__in "$lf" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1 >/dev/null || return 1
        ls__in "$lf" ip link add br0 type bridge && ls__in "$lf" ip link set br0 up &&
            ls__in "$lf" ip addr add "10.40.$L.1/24" dev br0 || return 1
        for ((S = 1; S <= spines; S++)); do
            ls__veth "$lf" "up$S" "${LS_PREFIX}sp$S" "dn$L" || { ls__fail "uplink leaf $L spine $S"; return 1; }
            ls__in "$lf" ip addr add "10.41.$L.$((4 * S + 1))/30" dev "up$S" &&
                ls__in "${LS_PREFIX}sp$S" ip addr add "10.41.$L.$((4 * S + 2))/30" dev "dn$L" &&
                ls__in "${LS_PREFIX}sp$S" ip route add "10.40.$L.0/24" via "10.41.$L.$((4 * S + 1))" || return 1
        done
    done
    for ((L = 1; L <= leaves; L++)); do
        nh=()
        for ((S = 1; S <= spines; S++)); do nh+=(nexthop via "10.41.$L.$((4 * S + 2))" dev "up$S"); done
        for ((M = 1; M <= leaves; M++)); do
            ((M == L)) && continue
            ls__in "${LS_PREFIX}lf$L" ip route add "10.40.$M.0/24" "${nh[@]}" || { ls__fail "ECMP route leaf $L"; return 1; }
        done
    done
    ls_qos || return 1
    ls__say "up: $leaves leaves, $spines spines, uplinks ${LS_UPLINK_RATE:-100mbit} each, prefix $LS_PREFIX"
}

# ls_qos: the DSCP classes at every uplink egress (both ends), fresh counters.
ls_qos() {
    local rate=${LS_UPLINK_RATE:-100mbit} limit=${LS_LIMIT:-1000} L S ns dev
    for ((L = 1; L <= ${LS_LEAVES:-2}; L++)); do
        for ((S = 1; S <= ${LS_SPINES:-2}; S++)); do
            for ns_dev in "${LS_PREFIX}lf$L up$S" "${LS_PREFIX}sp$S dn$L"; do
                read -r ns dev <<<"$ns_dev"
                ls__in "$ns" tc qdisc del dev "$dev" root 2>/dev/null
                ls__in "$ns" tc qdisc add dev "$dev" root handle 1: htb default 20 &&
                    ls__in "$ns" tc class add dev "$dev" parent 1: classid 1:1 htb rate "$rate" ceil "$rate" quantum 15140 &&
                    ls__in "$ns" tc class add dev "$dev" parent 1:1 classid 1:10 htb rate "$rate" ceil "$rate" prio 0 quantum 15140 &&
                    ls__in "$ns" tc class add dev "$dev" parent 1:1 classid 1:20 htb rate 1mbit ceil "$rate" prio 1 quantum 15140 &&
                    ls__in "$ns" tc class add dev "$dev" parent 1:1 classid 1:30 htb rate 1mbit ceil "$rate" prio 2 quantum 15140 || {
                    ls__fail "QoS on $dev in $ns"; return 1; }
                for c in 10 20 30; do
                    ls__in "$ns" tc qdisc add dev "$dev" parent "1:$c" handle "$c:" pfifo limit "$limit" || return 1
                done
                ls__in "$ns" tc filter add dev "$dev" parent 1: protocol ip prio 1 u32 match ip dsfield 0x80 0x80 flowid 1:10 &&
                    ls__in "$ns" tc filter add dev "$dev" parent 1: protocol ip prio 2 u32 match ip dsfield 0x20 0xfc flowid 1:30 &&
                    ls__in "$ns" tc filter add dev "$dev" parent 1: protocol ip prio 2 u32 match ip dsfield 0x04 0xfc flowid 1:30 ||
                    { ls__fail "DSCP filters on $dev in $ns"; return 1; }
            done
        done
    done
}

# ls_attach NETNS LEAF N NAME [IFNAME]: plug an existing namespace into leaf
# LEAF as 10.40.LEAF.N (interface IFNAME, default fab0).
ls_attach() {
    local ns=$1 L=$2 n=$3 name=$4 ifn=${5:-fab0} lf=${LS_PREFIX}lf$2 port
    [[ -n $LS_PREFIX ]] || { ls__fail "ls_create first"; return 1; }
    port=p$n
    ls__veth "$ns" "$ifn" "$lf" "$port" || { ls__fail "cannot attach $name"; return 1; }
    ls__in "$lf" ip link set "$port" master br0 &&
        ls__in "$ns" ip addr add "10.40.$L.$n/24" dev "$ifn" &&
        ls__in "$ns" ip route add 10.40.0.0/16 via "10.40.$L.1" dev "$ifn" || { ls__fail "addresses of $name"; return 1; }
    LS__NS[$name]=$ns
    LS__IP[$name]=10.40.$L.$n
}

# ls_host NAME LEAF N: a namespace of our own, attached to LEAF.
ls_host() {
    local ns=${LS_PREFIX}$1
    ls__netns "$ns" && ls_attach "$ns" "$2" "$3" "$1"
}

# ls_uplink_stats: one line per uplink end: "lfL upS tx_packets B10 B20 B30"
# (bytes sent in the priority, best-effort and scavenger classes).
ls_uplink_stats() {
    local L S ns dev
    for ((L = 1; L <= ${LS_LEAVES:-2}; L++)); do
        for ((S = 1; S <= ${LS_SPINES:-2}; S++)); do
            for ns_dev in "lf$L up$S" "sp$S dn$L"; do
                read -r ns dev <<<"$ns_dev"
                printf '%s %s %s' "$ns" "$dev" "$(ls__in "${LS_PREFIX}$ns" awk -v d="$dev:" '$1 == d { print $11 }' /proc/net/dev)"
                ls__in "${LS_PREFIX}$ns" tc -s class show dev "$dev" | awk '
                    $1 == "class" { c = $3 } $1 == "Sent" { b[c] = $2 }
                    END { printf " %d %d %d\n", b["1:10"], b["1:20"], b["1:30"] }'
            done
        done
    done
}

# ls_queue_sample FILE SECONDS [INTERVAL]: every INTERVAL s (default 0.05) for
# SECONDS, the backlog in bytes of the three classes at every uplink end, and
# the bytes each class has sent since ls_qos, one line per sample:
# "time ns/dev backlog10 backlog20 backlog30 sent10 sent20 sent30". The
# queueing delay a packet met is its class's backlog over the uplink rate;
# the difference of two samples' sent columns is what a class got between them.
ls_queue_sample() {
    local file=$1 seconds=$2 interval=${3:-0.05} end L S ns dev
    end=$(($(date +%s) + seconds))
    : >"$file"
    while (($(date +%s) < end)); do
        for ((L = 1; L <= ${LS_LEAVES:-2}; L++)); do
            for ((S = 1; S <= ${LS_SPINES:-2}; S++)); do
                for ns_dev in "lf$L up$S" "sp$S dn$L"; do
                    read -r ns dev <<<"$ns_dev"
                    ls__in "${LS_PREFIX}$ns" tc -s qdisc show dev "$dev" | awk -v t="$EPOCHREALTIME" -v d="$ns/$dev" '
                        $1 == "qdisc" { h = $3 } $1 == "Sent" { s[h] = $2 } $1 == "backlog" { b = $2; sub(/b$/, "", b)
                            if (b ~ /K$/) { sub(/K$/, "", b); b *= 1000 } else if (b ~ /M$/) { sub(/M$/, "", b); b *= 1000000 }
                            q[h] = b }
                        END { printf "%s %s %d %d %d %.0f %.0f %.0f\n", t, d, q["10:"], q["20:"], q["30:"], s["10:"], s["20:"], s["30:"] }' >>"$file"
                done
            done
        done
        sleep "$interval"
    done
}

ls_destroy() {
    local ns
    for ns in "${LS__OWNED[@]}"; do ip netns del "$ns" 2>/dev/null; done
    LS__OWNED=()
    LS__NS=()
    LS__IP=()
}
