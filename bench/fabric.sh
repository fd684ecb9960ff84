# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# bench/fabric.sh: a shared, oversubscribed cluster fabric in network namespaces,
# for the inference-latency benchmark (bench/run_latency_bench.sh) and the
# cluster harness. Source it; every function is prefixed fabric_.
#
#   source bench/fabric.sh
#   fabric_install_trap                 # fabric_destroy on EXIT/INT/TERM
#   fabric_create                       # switch, far side, train1 train2 infer1
#   fabric_qos dscp                     # the switch trusts DSCP
#   fabric_node_cap train1 95mbit       # what Lanes does on a training node
#   fabric_mark train1 CS1
#   fabric_exec far iperf3 -s ...       # run something on a fabric member
#   fabric_destroy
#
# Topology (P = per-run prefix such as "lf4711", X = per-run number 1..250):
#
#   netns P"train1"  netns P"train2"  netns P"infer1"   (or any namespace a
#     fab0 198.18.X.11  .12              .13              caller attaches)
#        |               |                |
#   netns P"sw": bridge br0 (the top-of-rack switch, no address)
#        | up0   <- THE BOTTLENECK: FABRIC_RATE (200mbit) with a FIFO of
#        |          FABRIC_LIMIT (1000) frames, shaped at the egress of both
#        |          ends; fabric_qos picks one FIFO or DSCP priority classes
#   netns P"far": bridge br0 with 198.18.X.254 (the far side of the uplink:
#                  inference clients and the training peers' far ends)
#
# IPv6 alongside: fd00:78:X::11 ... fd00:78:X::254 (/64). Every address lives
# only inside the namespaces; nothing leaves them.
#
# Links carry frames, as real ones do: TSO is off on every veth, so TCP still
# builds GSO super-packets (the host's qdisc, e.g. Lanes' cap, sees them as it
# would with a TSO NIC) and they are cut into MTU frames on transmit, after the
# host's qdisc. A host's GSO size is therefore the size of the back-to-back
# burst it puts on the wire (fabric_gso).
#
# Functions (each returns non-zero with a "fabric: error: ..." line on failure):
#   fabric_create                      the fabric and the FABRIC_HOSTS hosts
#   fabric_attach NS ROLE ADDR [ADDR6] [IFNAME] [NAME]
#                                      plug an existing namespace in (the
#                                      cluster harness's slurmd namespaces)
#   fabric_qos none|dscp               the switch: one FIFO, or DSCP priority
#   fabric_node_cap HOST RATE|off [BURST] [LIMIT]   HTB cap on the host's NIC
#   fabric_mark HOST DSCP|off          nftables DSCP mark on all it sends
#   fabric_gso HOST BYTES|default      gso_max_size on the host's NIC
#   fabric_exec NAME CMD...            run in a member's namespace (nsenter)
#   fabric_spawn NAME LOG CMD...       the same in the background, PID in
#                                      FABRIC_SPAWNED
#   fabric_ns/fabric_ip/fabric_ip6/fabric_dev/fabric_role NAME, fabric_members [ROLE]
#   fabric_uplink_stats [sw|far]       bytes, packets, drops per uplink class
#   fabric_queue_sample FILE SECONDS [INTERVAL]
#                                      the uplink classes' backlog at both ends,
#                                      sampled (the switch's queueing delay)
#   fabric_add_host NAME ROLE N        a new namespace as member NAME at .N
#   fabric_port_cap NAME RATE|off [BURST]  a FIFO at RATE on the switch's
#                                      port toward NAME (that member's downlink)
#   fabric_bulk_create NAME...         a second, plain fabric for bulk traffic
#                                      (see below); fabric_bulk_qos resets its
#                                      FIFOs, fabric_bulk_stats reads them,
#                                      fabric_bulk_ip NAME
#   fabric_destroy, fabric_install_trap
#
# The bulk fabric (fabric_bulk_create): a switch of its own (namespace P"bsw")
# whose uplink to the far side is shaped at FABRIC_RATE with one FIFO (a plain
# switch: it ignores DSCP), a NIC bulk0 on each member named at
# 198.19.X.N / fd00:79:X::N (N: the member's host number on the fabric), and a
# second interface bulk0 on the far side at 198.19.X.254 / fd00:79:X::254. The
# far side answers ARP for its fabric address on bulk0 too, so a host that
# routes the far side's fabric address out of bulk0 on-link reaches it.
#
# Members are addressed by their short name (train1, infer1, far, sw, or the
# name given to fabric_attach). Settings (read by fabric_create):
#   FABRIC_RATE    uplink rate, Lanes' syntax (see fabric__tc_rate_bits;
#                  default 200mbit)
#   FABRIC_LANESCTL the lanesctl that reads rates (default: the build tree's)
#   FABRIC_LIMIT   FIFO length in frames on each uplink queue (default 1000)
#   FABRIC_MTU     MTU of every fabric link, 1280..9000 (default 1500)
#   FABRIC_BURST   HTB burst of the uplink classes (default 4 frames: 6056
#                  bytes at MTU 1500)
#   FABRIC_HOSTS   "name:role ..." made by fabric_create (default
#                  "train1:train train2:train infer1:infer"); roles: train,
#                  infer, host
# After fabric_create: FABRIC_PREFIX FABRIC_SUBNET FABRIC_SUBNET6, and
# fabric_ip NAME / fabric_ip6 NAME / fabric_ns NAME / fabric_dev NAME.

if [[ -n ${FABRIC__LOADED:-} ]]; then
    return 0
fi
FABRIC__LOADED=1

FABRIC_PREFIX=""
FABRIC_SUBNET=""
FABRIC_SUBNET6=""
FABRIC_QOS=""
FABRIC__RATE="" FABRIC__LIMIT="" FABRIC__BURST="" FABRIC__MTU=1500
declare -gA FABRIC__NS=()      # name -> namespace
declare -gA FABRIC__ROLE=()    # name -> role (train, infer, host, far, switch)
declare -gA FABRIC__DEV=()     # name -> its fabric interface inside its namespace
declare -gA FABRIC__IP=()      # name -> IPv4 address (no prefix length)
declare -gA FABRIC__IP6=()     # name -> IPv6 address
declare -ga FABRIC__OWNED=()   # namespaces fabric_create made (deleted by fabric_destroy)
declare -ga FABRIC__MEMBERS=() # names, in attach order
declare -gA FABRIC__PORT=()    # name -> its port on the switch (or far side's bridge)
declare -ga FABRIC__BULK=()    # names with a NIC on the bulk fabric
FABRIC__PORTS=0

fabric__say() { printf 'fabric: %s\n' "$*" >&2; }
fabric__fail() { fabric__say "error: $*"; return 1; }

# fabric__tc_rate_bits RATE: "200mbit" -> 200000000. Rates follow Lanes' rules
# (lanesctl rate: bit..Tbit, 1000-based; "bps" refused, a percentage is not a
# rate here), not rules of their own: FABRIC_LANESCTL, else the build tree's
# lanesctl ($LANES_BUILDDIR), else lanesctl on PATH.
fabric__tc_rate_bits() {
    local ctl=${FABRIC_LANESCTL:-} bits
    [[ -n $ctl ]] || { [[ -x ${LANES_BUILDDIR:-}/lanesctl/lanesctl ]] && ctl=$LANES_BUILDDIR/lanesctl/lanesctl; }
    [[ -n $ctl ]] || ctl=$(command -v lanesctl) || { fabric__say "error: no lanesctl to read rates (set FABRIC_LANESCTL)"; return 1; }
    bits=$("$ctl" rate "$1") || return 1
    [[ $bits =~ ^[0-9]+$ ]] || { fabric__say "error: '$1' is a share of a link, not a rate"; return 1; }
    printf '%s\n' "$bits"
}

# fabric__dscp_value NAME|NUMBER: CS0..CS7, AF11..AF43, EF, VA, LE, DF, 0..63.
fabric__dscp_value() {
    local d=${1^^}
    case $d in
        EF) echo 46 ;; VA) echo 44 ;; LE) echo 1 ;; DF | BE) echo 0 ;;
        CS[0-7]) echo $((${d:2:1} * 8)) ;;
        AF[1-4][1-3]) echo $((${d:2:1} * 8 + ${d:3:1} * 2)) ;;
        *) if [[ $d =~ ^[0-9]+$ ]] && ((10#$d <= 63)); then echo $((10#$d)); else return 1; fi ;;
    esac
}

fabric_ns() {
    [[ -n ${FABRIC__NS[$1]:-} ]] || { fabric__fail "no fabric member '$1'"; return 1; }
    printf '%s\n' "${FABRIC__NS[$1]}"
}
fabric_ip() { [[ -n ${FABRIC__IP[$1]:-} ]] && printf '%s\n' "${FABRIC__IP[$1]}"; }
fabric_ip6() { [[ -n ${FABRIC__IP6[$1]:-} ]] && printf '%s\n' "${FABRIC__IP6[$1]}"; }
fabric_dev() { [[ -n ${FABRIC__DEV[$1]:-} ]] && printf '%s\n' "${FABRIC__DEV[$1]}"; }
fabric_role() { printf '%s\n' "${FABRIC__ROLE[$1]:-}"; }
# fabric_members [ROLE]: names of the members (of one role).
fabric_members() {
    local n
    for n in "${FABRIC__MEMBERS[@]}"; do
        [[ -z ${1:-} || ${FABRIC__ROLE[$n]} == "$1" ]] && printf '%s\n' "$n"
    done
}

# fabric_exec NAME CMD...: run CMD in the member's network namespace (nsenter,
# so /sys and cgroups stay visible).
fabric_exec() {
    local ns
    ns=$(fabric_ns "$1") || return 1
    nsenter --net="/run/netns/$ns" -- "${@:2}"
}

# fabric_spawn NAME LOG CMD...: start CMD in the background in the member's
# namespace, output to LOG; its PID (nsenter execs CMD) is left in FABRIC_SPAWNED.
fabric_spawn() {
    local ns
    ns=$(fabric_ns "$1") || return 1
    nsenter --net="/run/netns/$ns" -- "${@:3}" >"$2" 2>&1 </dev/null &
    FABRIC_SPAWNED=$!
}

fabric__in() { nsenter --net="/run/netns/$1" -- "${@:2}"; }

# A veth end that carries frames: TSO off (GSO stays on, see the header).
fabric__frames_only() {
    local ns=$1 dev=$2
    fabric__in "$ns" ip link set dev "$dev" mtu "$FABRIC__MTU" || { fabric__fail "cannot set MTU $FABRIC__MTU on $dev"; return 1; }
    fabric__in "$ns" ethtool -K "$dev" tso off >/dev/null 2>&1 ||
        fabric__fail "cannot turn TSO off on $dev in $ns (is ethtool installed?)"
}

# fabric_create: build the switch, the uplink and the far side, then the hosts
# in FABRIC_HOSTS. Prints one line with the prefix and the subnets.
fabric_create() {
    [[ -z $FABRIC_PREFIX ]] || { fabric__fail "a fabric already exists (prefix $FABRIC_PREFIX)"; return 1; }
    command -v ethtool >/dev/null || { fabric__fail "ethtool is missing (contrib/install-deps.sh)"; return 1; }
    : "${FABRIC_RATE:=200mbit}" "${FABRIC_LIMIT:=1000}" "${FABRIC_MTU:=1500}"
    [[ $FABRIC_MTU =~ ^[1-9][0-9]*$ ]] && ((FABRIC_MTU >= 1280 && FABRIC_MTU <= 9000)) ||
        { fabric__fail "bad FABRIC_MTU '$FABRIC_MTU' (1280..9000)"; return 1; }
    : "${FABRIC_BURST:=$((4 * (FABRIC_MTU + 14)))}"
    : "${FABRIC_HOSTS=train1:train train2:train infer1:infer}"
    fabric__tc_rate_bits "$FABRIC_RATE" >/dev/null || { fabric__fail "bad FABRIC_RATE '$FABRIC_RATE'"; return 1; }
    [[ $FABRIC_LIMIT =~ ^[1-9][0-9]*$ ]] || { fabric__fail "bad FABRIC_LIMIT '$FABRIC_LIMIT'"; return 1; }
    [[ $FABRIC_BURST =~ ^[1-9][0-9]*$ ]] || { fabric__fail "bad FABRIC_BURST '$FABRIC_BURST'"; return 1; }
    # Kept for the life of the fabric (the caller may have set them for this call only).
    FABRIC__RATE=$FABRIC_RATE FABRIC__LIMIT=$FABRIC_LIMIT FABRIC__BURST=$FABRIC_BURST FABRIC__MTU=$FABRIC_MTU
    local try p
    for try in 0 1 2 3 4 5 6 7 8 9; do
        if ((try == 0)); then p=lf$$; else p=lf$$r$RANDOM; fi
        [[ -e /run/netns/${p}sw ]] && continue
        if ip netns add "${p}sw" 2>/dev/null; then FABRIC_PREFIX=$p; break; fi
    done
    [[ -n $FABRIC_PREFIX ]] || { fabric__fail "cannot create a network namespace"; return 1; }
    FABRIC__OWNED=("${FABRIC_PREFIX}sw")
    local x=$((RANDOM % 250 + 1))
    FABRIC_SUBNET=198.18.$x
    FABRIC_SUBNET6=fd00:78:$x
    local sw=${FABRIC_PREFIX}sw far=${FABRIC_PREFIX}far
    FABRIC__NS[sw]=$sw FABRIC__ROLE[sw]=switch FABRIC__DEV[sw]=up0
    ip netns add "$far" || { fabric__fail "cannot create $far"; return 1; }
    FABRIC__OWNED+=("$far")
    FABRIC__NS[far]=$far FABRIC__ROLE[far]=far FABRIC__DEV[far]=br0
    FABRIC__IP[far]=$FABRIC_SUBNET.254 FABRIC__IP6[far]=$FABRIC_SUBNET6::254
    local ns
    for ns in "$sw" "$far"; do
        fabric__in "$ns" ip link set lo up &&
            fabric__in "$ns" ip link add br0 type bridge stp_state 0 forward_delay 0 mcast_snooping 0 &&
            fabric__in "$ns" ip link set br0 up || { fabric__fail "cannot make the bridge in $ns"; return 1; }
        # Bridged frames need no trip through netfilter here.
        fabric__in "$ns" sysctl -qw net.bridge.bridge-nf-call-iptables=0 net.bridge.bridge-nf-call-ip6tables=0 \
            net.bridge.bridge-nf-call-arptables=0 2>/dev/null || true
        fabric__in "$ns" sysctl -qw net.ipv6.conf.all.accept_ra=0 net.ipv6.conf.default.accept_ra=0 2>/dev/null || true
    done
    # The uplink: up0 in the switch <-> up0 in the far side.
    ip -n "$sw" link add up0 type veth peer name up0 netns "$far" &&
        ip -n "$sw" link set up0 master br0 up &&
        ip -n "$far" link set up0 master br0 up &&
        ip -n "$far" addr add "${FABRIC__IP[far]}/24" dev br0 &&
        ip -n "$far" addr add "${FABRIC__IP6[far]}/64" dev br0 nodad || { fabric__fail "cannot make the uplink"; return 1; }
    fabric__frames_only "$sw" up0 && fabric__frames_only "$far" up0 || return 1
    FABRIC__MEMBERS+=(far)
    fabric_qos none || return 1
    local w name role i=10
    for w in $FABRIC_HOSTS; do
        IFS=: read -r name role <<<"$w"
        i=$((i + 1))
        fabric_add_host "$name" "$role" "$i" || return 1
    done
    fabric__say "up: prefix $FABRIC_PREFIX, $FABRIC_SUBNET.0/24 $FABRIC_SUBNET6::/64, uplink $FABRIC__RATE" \
        "FIFO $FABRIC__LIMIT frames, members: ${FABRIC__MEMBERS[*]}"
}

# fabric_add_host NAME ROLE N: a namespace of the fabric's own (P+NAME,
# deleted by fabric_destroy) attached as member NAME with ROLE (as
# fabric_attach) at $FABRIC_SUBNET.N and $FABRIC_SUBNET6::N.
fabric_add_host() {
    local name=$1 role=$2 i=$3 ns
    [[ -n $FABRIC_PREFIX ]] || { fabric__fail "fabric_add_host: no fabric (fabric_create first)"; return 1; }
    [[ $name =~ ^[a-z][a-z0-9]{0,9}$ ]] || { fabric__fail "bad host name '$name'"; return 1; }
    [[ $i =~ ^[0-9]+$ ]] && ((i >= 1 && i <= 253)) || { fabric__fail "bad host number '$i' (1..253)"; return 1; }
    ns=${FABRIC_PREFIX}$name
    ip netns add "$ns" || { fabric__fail "cannot create $ns"; return 1; }
    FABRIC__OWNED+=("$ns")
    fabric__in "$ns" ip link set lo up || return 1
    fabric__in "$ns" sysctl -qw net.ipv6.conf.all.accept_ra=0 net.ipv6.conf.default.accept_ra=0 || return 1
    fabric_attach "$ns" "$role" "$FABRIC_SUBNET.$i" "$FABRIC_SUBNET6::$i" fab0 "$name"
}

# fabric_attach NS ROLE ADDR [ADDR6] [IFNAME] [NAME]: connect an existing
# namespace NS (e.g. the cluster harness's slurmd namespace) to the fabric.
#   ROLE   train | infer | host: a port of the switch, on the near side of the
#          bottleneck; far: a port of the far side's bridge (past the uplink)
#   ADDR   IPv4 address for NS's new interface, with or without /24
#   ADDR6  IPv6 address (optional, "" for none)
#   IFNAME the interface in NS (default fab0); NAME the member name (default:
#          NS without the fabric prefix)
# The interface goes away with the fabric (fabric_destroy deletes the switch).
fabric_attach() {
    local ns=$1 role=$2 addr=$3 addr6=${4:-} dev=${5:-fab0} name=${6:-}
    [[ -n $FABRIC_PREFIX ]] || { fabric__fail "fabric_attach: no fabric (fabric_create first)"; return 1; }
    [[ -e /run/netns/$ns ]] || { fabric__fail "fabric_attach: no namespace $ns"; return 1; }
    [[ -n $name ]] || name=${ns#"$FABRIC_PREFIX"}
    [[ -z ${FABRIC__NS[$name]:-} ]] || { fabric__fail "fabric_attach: member '$name' exists"; return 1; }
    local bridge_ns
    case $role in
        train | infer | host) bridge_ns=${FABRIC__NS[sw]} ;;
        far) bridge_ns=${FABRIC__NS[far]} ;;
        *) fabric__fail "fabric_attach: role '$role' is not train, infer, host or far"; return 1 ;;
    esac
    [[ $addr == */* ]] || addr=$addr/24
    FABRIC__PORTS=$((FABRIC__PORTS + 1))
    local port=p$FABRIC__PORTS
    ip -n "$bridge_ns" link add "$port" type veth peer name "$dev" netns "$ns" &&
        ip -n "$bridge_ns" link set "$port" master br0 up &&
        ip -n "$ns" addr add "$addr" dev "$dev" &&
        { [[ -z $addr6 ]] || ip -n "$ns" addr add "${addr6%/*}/64" dev "$dev" nodad; } &&
        ip -n "$ns" link set "$dev" up || { fabric__fail "cannot attach $ns as $role"; return 1; }
    fabric__frames_only "$bridge_ns" "$port" && fabric__frames_only "$ns" "$dev" || return 1
    FABRIC__NS[$name]=$ns FABRIC__ROLE[$name]=$role FABRIC__DEV[$name]=$dev FABRIC__PORT[$name]=$port
    FABRIC__IP[$name]=${addr%/*} FABRIC__IP6[$name]=${addr6%/*}
    FABRIC__MEMBERS+=("$name")
}

# fabric__uplink_qdisc NS DEV MODE: the shaped uplink egress in one namespace.
#   none: one HTB class at FABRIC_RATE, one FIFO of FABRIC_LIMIT frames.
#   dscp: the switch trusts DSCP. Three HTB classes under FABRIC_RATE, each with
#     its own FIFO, all allowed to borrow up to the full rate; when they compete,
#     HTB serves the lower prio first:
#       1:10 prio 0  DSCP 32..63 (CS4-CS7, AF4x, VA, EF)  assured 25%
#       1:20 prio 1  everything else (best effort)        assured 65%
#       1:30 prio 2  CS1 and LE (scavenger)                assured 10%
fabric__uplink_qdisc() {
    local ns=$1 dev=$2 mode=$3 bits
    bits=$(fabric__tc_rate_bits "$FABRIC__RATE") || return 1
    local b=$FABRIC__BURST lim=$FABRIC__LIMIT q=$((FABRIC__MTU + 14)) t=(fabric__in "$ns" tc)
    "${t[@]}" qdisc del dev "$dev" root 2>/dev/null
    "${t[@]}" qdisc add dev "$dev" root handle 1: htb default 20 &&
        "${t[@]}" class add dev "$dev" parent 1: classid 1:1 htb rate "${bits}bit" ceil "${bits}bit" \
            burst "$b" cburst "$b" quantum "$q" || return 1
    if [[ $mode == none ]]; then
        "${t[@]}" class add dev "$dev" parent 1:1 classid 1:20 htb rate "${bits}bit" ceil "${bits}bit" \
            burst "$b" cburst "$b" quantum "$q" prio 1 &&
            "${t[@]}" qdisc add dev "$dev" parent 1:20 handle 20: pfifo limit "$lim" || return 1
        return 0
    fi
    local c share prio
    for c in 10:25:0 20:65:1 30:10:2; do
        IFS=: read -r cls share prio <<<"$c"
        "${t[@]}" class add dev "$dev" parent 1:1 classid "1:$cls" htb rate "$((bits * share / 100))bit" \
            ceil "${bits}bit" burst "$b" cburst "$b" quantum "$q" prio "$prio" &&
            "${t[@]}" qdisc add dev "$dev" parent "1:$cls" handle "$cls:" pfifo limit "$lim" || return 1
    done
    # The DS field is the top six bits of the IPv4 TOS / IPv6 traffic class.
    "${t[@]}" filter add dev "$dev" parent 1: protocol ip prio 1 u32 match ip dsfield 0x80 0x80 flowid 1:10 &&
        "${t[@]}" filter add dev "$dev" parent 1: protocol ip prio 2 u32 match ip dsfield 0x20 0xfc flowid 1:30 &&
        "${t[@]}" filter add dev "$dev" parent 1: protocol ip prio 2 u32 match ip dsfield 0x04 0xfc flowid 1:30 &&
        "${t[@]}" filter add dev "$dev" parent 1: protocol ipv6 prio 3 u32 match ip6 priority 0x80 0x80 flowid 1:10 &&
        "${t[@]}" filter add dev "$dev" parent 1: protocol ipv6 prio 4 u32 match ip6 priority 0x20 0xfc flowid 1:30 &&
        "${t[@]}" filter add dev "$dev" parent 1: protocol ipv6 prio 4 u32 match ip6 priority 0x04 0xfc flowid 1:30
}

# fabric_qos none|dscp: how the switch treats the uplink (both directions).
fabric_qos() {
    local mode=$1
    [[ $mode == none || $mode == dscp ]] || { fabric__fail "fabric_qos: '$mode' is not none or dscp"; return 1; }
    fabric__uplink_qdisc "${FABRIC__NS[sw]}" up0 "$mode" &&
        fabric__uplink_qdisc "${FABRIC__NS[far]}" up0 "$mode" || { fabric__fail "cannot set qos $mode"; return 1; }
    FABRIC_QOS=$mode
}

# fabric_port_cap NAME RATE|off [BURST]: the switch's port toward member NAME
# (its downlink) becomes a link of RATE with one FIFO of FABRIC_LIMIT frames
# (HTB bucket BURST bytes, default FABRIC_BURST), as the uplink without QoS;
# off: unshaped again.
fabric_port_cap() {
    local name=$1 rate=$2 burst=${3:-$FABRIC__BURST} ns port bits
    [[ -n ${FABRIC__PORT[$name]:-} ]] || { fabric__fail "fabric_port_cap: no fabric member '$name'"; return 1; }
    port=${FABRIC__PORT[$name]}
    case ${FABRIC__ROLE[$name]} in far) ns=${FABRIC__NS[far]} ;; *) ns=${FABRIC__NS[sw]} ;; esac
    fabric__in "$ns" tc qdisc del dev "$port" root 2>/dev/null
    [[ $rate == off ]] && return 0
    bits=$(fabric__tc_rate_bits "$rate") || { fabric__fail "fabric_port_cap: bad rate '$rate'"; return 1; }
    [[ $burst =~ ^[1-9][0-9]*$ ]] || { fabric__fail "fabric_port_cap: bad burst '$burst'"; return 1; }
    fabric__fifo_qdisc "$ns" "$port" "$bits" "$burst" || { fabric__fail "cannot cap the port toward $name at $rate"; return 1; }
}

# fabric__fifo_qdisc NS DEV BITS [BURST]: a link of BITS bit/s with one FIFO.
fabric__fifo_qdisc() {
    local ns=$1 dev=$2 bits=$3 b=${4:-$FABRIC__BURST} q=$((FABRIC__MTU + 14)) t=(fabric__in "$1" tc)
    "${t[@]}" qdisc del dev "$dev" root 2>/dev/null
    "${t[@]}" qdisc add dev "$dev" root handle 1: htb default 20 &&
        "${t[@]}" class add dev "$dev" parent 1: classid 1:1 htb rate "${bits}bit" ceil "${bits}bit" \
            burst "$b" cburst "$b" quantum "$q" &&
        "${t[@]}" class add dev "$dev" parent 1:1 classid 1:20 htb rate "${bits}bit" ceil "${bits}bit" \
            burst "$b" cburst "$b" quantum "$q" prio 1 &&
        "${t[@]}" qdisc add dev "$dev" parent 1:20 handle 20: pfifo limit "$FABRIC__LIMIT"
}

# fabric_bulk_create NAME...: the bulk fabric (see the header) with a NIC bulk0
# on each member named.
fabric_bulk_create() {
    [[ -n $FABRIC_PREFIX ]] || { fabric__fail "fabric_bulk_create: no fabric (fabric_create first)"; return 1; }
    [[ -z ${FABRIC__NS[bsw]:-} ]] || { fabric__fail "fabric_bulk_create: the bulk fabric exists"; return 1; }
    local bsw=${FABRIC_PREFIX}bsw far=${FABRIC__NS[far]} x=${FABRIC_SUBNET##*.} name ns n i=0
    ip netns add "$bsw" || { fabric__fail "cannot create $bsw"; return 1; }
    FABRIC__OWNED+=("$bsw")
    FABRIC__NS[bsw]=$bsw FABRIC__ROLE[bsw]=switch FABRIC__DEV[bsw]=bup0
    fabric__in "$bsw" ip link set lo up &&
        fabric__in "$bsw" ip link add br0 type bridge stp_state 0 forward_delay 0 mcast_snooping 0 &&
        fabric__in "$bsw" ip link set br0 up &&
        fabric__in "$bsw" sysctl -qw net.ipv6.conf.all.accept_ra=0 net.ipv6.conf.default.accept_ra=0 &&
        ip -n "$bsw" link add bup0 type veth peer name bulk0 netns "$far" &&
        ip -n "$bsw" link set bup0 master br0 up &&
        ip -n "$far" addr add "198.19.$x.254/24" dev bulk0 &&
        ip -n "$far" addr add "fd00:79:$x::254/64" dev bulk0 nodad &&
        ip -n "$far" link set bulk0 up || { fabric__fail "cannot make the bulk uplink"; return 1; }
    fabric__frames_only "$bsw" bup0 && fabric__frames_only "$far" bulk0 || return 1
    for name in "$@"; do
        ns=$(fabric_ns "$name") || return 1
        n=${FABRIC__IP[$name]##*.} i=$((i + 1))
        ip -n "$bsw" link add "b$i" type veth peer name bulk0 netns "$ns" &&
            ip -n "$bsw" link set "b$i" master br0 up &&
            ip -n "$ns" addr add "198.19.$x.$n/24" dev bulk0 &&
            ip -n "$ns" addr add "fd00:79:$x::$n/64" dev bulk0 nodad &&
            ip -n "$ns" link set bulk0 up || { fabric__fail "cannot give $name a bulk NIC"; return 1; }
        fabric__frames_only "$bsw" "b$i" && fabric__frames_only "$ns" bulk0 || return 1
        FABRIC__BULK+=("$name")
    done
    fabric_bulk_qos
}

# fabric_bulk_qos: the bulk uplink's FIFOs (both ends), with fresh counters.
fabric_bulk_qos() {
    local bits
    bits=$(fabric__tc_rate_bits "$FABRIC__RATE") || return 1
    fabric__fifo_qdisc "${FABRIC__NS[bsw]}" bup0 "$bits" && fabric__fifo_qdisc "${FABRIC__NS[far]}" bulk0 "$bits" ||
        { fabric__fail "cannot shape the bulk uplink"; return 1; }
}

# fabric_bulk_ip NAME: the member's address on the bulk fabric.
fabric_bulk_ip() {
    local name
    for name in "${FABRIC__BULK[@]}" far; do
        [[ $name == "$1" ]] && { printf '198.19.%s.%s\n' "${FABRIC_SUBNET##*.}" "${FABRIC__IP[$1]##*.}"; return 0; }
    done
    return 1
}

# fabric_bulk_stats: "CLASS SENT_BYTES SENT_PKTS DROPS" of the bulk uplink
# toward the far side.
fabric_bulk_stats() {
    fabric__in "${FABRIC__NS[bsw]}" tc -s class show dev bup0 | awk '
        /^class htb/ { cls = $3; leaf = ($0 ~ / leaf /) }
        /Sent/ && leaf { gsub(/[(),]/, " "); printf "%s %s %s %s\n", cls, $2, $4, $7 }'
}

# fabric_node_cap HOST RATE|off [BURST] [LIMIT]: what Lanes does on a training
# node, by hand: HTB on the host's fabric NIC, one class at RATE (ceil = rate),
# a FIFO of LIMIT packets (default 100) below it. BURST in bytes (default 3028:
# two frames; HTB's computed default lets a whole GSO burst through).
fabric_node_cap() {
    local name=$1 rate=$2 burst=${3:-3028} limit=${4:-100} ns dev
    ns=$(fabric_ns "$name") || return 1
    dev=${FABRIC__DEV[$name]}
    fabric__in "$ns" tc qdisc del dev "$dev" root 2>/dev/null
    [[ $rate == off ]] && return 0
    local bits
    bits=$(fabric__tc_rate_bits "$rate") || { fabric__fail "fabric_node_cap: bad rate '$rate'"; return 1; }
    fabric__in "$ns" tc qdisc add dev "$dev" root handle 1: htb default 10 &&
        fabric__in "$ns" tc class add dev "$dev" parent 1: classid 1:10 htb rate "${bits}bit" ceil "${bits}bit" \
            burst "$burst" cburst "$burst" quantum 1514 &&
        fabric__in "$ns" tc qdisc add dev "$dev" parent 1:10 handle 10: pfifo limit "$limit" ||
        { fabric__fail "cannot cap $name at $rate"; return 1; }
}

# fabric_mark HOST DSCP|off: mark everything the host sends (what Lanes does to
# a job's traffic), with nftables in the host's namespace.
fabric_mark() {
    local name=$1 dscp=$2 ns v
    ns=$(fabric_ns "$name") || return 1
    fabric__in "$ns" nft delete table inet fabric_mark 2>/dev/null
    [[ $dscp == off ]] && return 0
    v=$(fabric__dscp_value "$dscp") || { fabric__fail "fabric_mark: bad DSCP '$dscp'"; return 1; }
    fabric__in "$ns" nft -f - <<EOF || { fabric__fail "cannot mark $name with $dscp"; return 1; }
table inet fabric_mark {
    chain out {
        type filter hook output priority mangle; policy accept;
        meta nfproto ipv4 ip dscp set $v
        meta nfproto ipv6 ip6 dscp set $v
    }
}
EOF
}

# fabric_gso HOST BYTES|default: the largest GSO packet the host builds, i.e.
# the longest back-to-back burst it puts on the wire.
fabric_gso() {
    local name=$1 size=$2 ns
    ns=$(fabric_ns "$name") || return 1
    [[ $size == default ]] && size=65536
    [[ $size =~ ^[0-9]+$ ]] && ((size >= 1500 && size <= 65536)) ||
        { fabric__fail "fabric_gso: '$2' is not 1500..65536 or default"; return 1; }
    fabric__in "$ns" ip link set dev "${FABRIC__DEV[$name]}" gso_max_size "$size" ||
        { fabric__fail "cannot set gso_max_size on $name"; return 1; }
}

# fabric_uplink_stats [sw|far]: "CLASS SENT_BYTES SENT_PKTS DROPS" per leaf
# class of the uplink egress (sw: toward the far side, the congested way).
fabric_uplink_stats() {
    local side=${1:-sw}
    fabric__in "${FABRIC__NS[$side]}" tc -s class show dev up0 | awk '
        /^class htb/ { cls = $3; leaf = ($0 ~ / leaf /) }
        /Sent/ && leaf { gsub(/[(),]/, " "); printf "%s %s %s %s\n", cls, $2, $4, $7 }'
}

# fabric_queue_sample FILE SECONDS [INTERVAL]: every INTERVAL s (default 0.05)
# for at most SECONDS, the backlog in bytes of the uplink's three classes at
# both ends, one line per end and sample: "TIME END BACKLOG10 BACKLOG20
# BACKLOG30" (END sw/up0: toward the far side, where the nodes' replies and
# training's bulk queue; far/up0: toward the nodes, the requests). With
# fabric_qos none everything is in 20. A packet that arrives at an end waits
# its class's backlog over FABRIC_RATE (the higher classes' backlog too, when
# it is not the priority class). Run it in the background; it stops by itself.
fabric_queue_sample() {
    local file=$1 seconds=$2 interval=${3:-0.05} end side
    [[ -n $FABRIC_PREFIX ]] || { fabric__fail "fabric_queue_sample: no fabric"; return 1; }
    end=$(($(date +%s) + seconds))
    : >"$file" || return 1
    while (($(date +%s) < end)); do
        for side in sw far; do
            fabric__in "${FABRIC__NS[$side]}" tc -s qdisc show dev up0 | awk -v t="$EPOCHREALTIME" -v d="$side/up0" '
                $1 == "qdisc" { h = $3 }
                $1 == "backlog" { b = $2; sub(/b$/, "", b)
                    if (b ~ /K$/) { sub(/K$/, "", b); b *= 1000 } else if (b ~ /M$/) { sub(/M$/, "", b); b *= 1000000 }
                    q[h] = b }
                END { printf "%s %s %d %d %d\n", t, d, q["10:"], q["20:"], q["30:"] }' >>"$file"
        done
        sleep "$interval"
    done
}

# fabric_pids: processes running in the namespaces this fabric made.
fabric_pids() {
    local ns
    for ns in "${FABRIC__OWNED[@]}"; do
        [[ -e /run/netns/$ns ]] && ip netns pids "$ns" 2>/dev/null
    done
}

# fabric_destroy: stop what still runs in our namespaces (all of it started by
# this run) and delete them; attached namespaces only lose their fabric NIC.
fabric_destroy() {
    [[ -n $FABRIC_PREFIX ]] || return 0
    local ns i name owned
    # Attached namespaces are not ours: take back only our interface, now
    # (namespace deletion would remove it too, but asynchronously).
    for name in "${FABRIC__MEMBERS[@]}"; do
        ns=${FABRIC__NS[$name]} owned=0
        for i in "${FABRIC__OWNED[@]}"; do [[ $i == "$ns" ]] && owned=1; done
        ((owned)) || ip -n "$ns" link del "${FABRIC__DEV[$name]}" 2>/dev/null
    done
    for name in "${FABRIC__BULK[@]}"; do
        ns=${FABRIC__NS[$name]} owned=0
        for i in "${FABRIC__OWNED[@]}"; do [[ $i == "$ns" ]] && owned=1; done
        ((owned)) || ip -n "$ns" link del bulk0 2>/dev/null
    done
    local -a sig=(-TERM) list
    for i in 1 2 3 4 5 6 7 8 9 10; do
        mapfile -t list < <(fabric_pids)
        ((${#list[@]})) || break
        ((i > 5)) && sig=(-KILL)
        kill "${sig[@]}" "${list[@]}" 2>/dev/null
        sleep 0.2
    done
    for ns in "${FABRIC__OWNED[@]}"; do
        [[ -e /run/netns/$ns ]] && { ip netns delete "$ns" || fabric__say "cannot delete $ns"; }
    done
    FABRIC_PREFIX="" FABRIC_QOS="" FABRIC__OWNED=() FABRIC__MEMBERS=() FABRIC__PORTS=0 FABRIC__BULK=()
    FABRIC__NS=() FABRIC__ROLE=() FABRIC__DEV=() FABRIC__IP=() FABRIC__IP6=() FABRIC__PORT=()
}

fabric_install_trap() {
    trap 'fabric_destroy' EXIT
    trap 'fabric_destroy; exit 130' INT
    trap 'fabric_destroy; exit 143' TERM
}
