# SPDX-License-Identifier: GPL-2.0-or-later
# Shared setup for the node-shaper network tests: two namespaces joined by a veth
# pair, unique per run, deleted on exit. Sourced by tests/net/shaper_*_test.sh.
#
#   $P          prefix (lt<pid>); namespaces ${P}a (the node) and ${P}b (the peer)
#   $DEV/$PEER  veth ends: $DEV in ${P}a (shaped), $PEER in ${P}b
#   10.77.0.1/24 fd77::1/64 on $DEV, 10.77.0.2 fd77::2 on $PEER
#   tool ARGS   shaper_tool in ${P}a (nsenter --net: /sys/fs/cgroup stays visible)
#   job_ceil_of JOB / job_ceil_is JOB CEIL   the ceil of a job's HTB class on $DEV
#   NA/NB       command prefixes to run in ${P}a / ${P}b
#   $SEND FAMILY PORT [TOS]   20 UDP datagrams of 200 bytes to the peer (4 or 6),
#               with IP_TOS/IPV6_TCLASS set by the sender when TOS is given
#   capture_start NAME FILTER / capture_stop   tcpdump in ${P}b on $PEER into
#               $PCAP ($STATE_ROOT/NAME.pcap), bounded in time
#   pcap_count FILTER   packets in $PCAP that match FILTER
#   LANES_NET_STATE_BASE   where the state dir is made (default /tmp)
#   stop_pid PID [SECONDS]   bounded SIGTERM, then SIGKILL (tests/stop_pid.sh)
set -u
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: $(basename "$0") needs root (network namespaces, tc, nftables, cgroup2)"
  exit 77
fi
for cmd in ip nsenter tc nft; do
  command -v "$cmd" >/dev/null || { echo "FAIL: $cmd not found"; exit 1; }
done
BUILDDIR=${LANES_BUILDDIR:-.}
TOOL=$BUILDDIR/tests/net/shaper_tool
[ -x "$TOOL" ] || { echo "FAIL: $TOOL not built (make check builds it)"; exit 1; }

P=lt$$
DEV=${P}x
PEER=${P}y
NA="nsenter --net=/run/netns/${P}a"
NB="nsenter --net=/run/netns/${P}b"
SPEED=${SPEED:-10000000000}
CG2=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2") { print $5; exit } break } }' /proc/self/mountinfo)
[ -n "$CG2" ] || { echo "FAIL: no cgroup2 mount"; exit 1; }
CGROOT=$CG2/$P
STATE_ROOT=$(mktemp -d "${LANES_NET_STATE_BASE:-/tmp}/${P}-state.XXXXXX")
STATE=$STATE_ROOT/state   # the state dirs registry (.lanes-state-dirs) lands in $STATE_ROOT
mkdir -p "$STATE"
STARTED_PIDS=""

. "$(dirname "${BASH_SOURCE[0]}")/../stop_pid.sh"

cleanup() {
  for pid in $STARTED_PIDS; do stop_pid "$pid" 10 2>/dev/null; done
  [ -e /run/netns/${P}a ] && tool remove-all >/dev/null 2>&1
  ip netns del ${P}a 2>/dev/null
  ip netns del ${P}b 2>/dev/null
  if [ -d "$CGROOT" ]; then
    for d in "$CGROOT"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
    rmdir "$CGROOT" 2>/dev/null
  fi
  rm -rf "$STATE_ROOT"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

. "$(dirname "${BASH_SOURCE[0]}")/nft_holds.sh"

tool() { $NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" "$@"; }
# job_ceil_of JOB: the ceil tc reports for the job's class on $DEV ("" if absent);
# job_ceil_is JOB CEIL: it is CEIL (e.g. 1Gbit).
job_ceil_of() { $NA tc class show dev "$DEV" classid "1a4e:$(printf %x "$1")" | grep -o 'ceil [0-9.]*[KMG]*bit' | awk '{print $2}'; }
job_ceil_is() { [ "$(job_ceil_of "$1")" = "$2" ]; }

fail() { echo "FAIL: $*"; exit 1; }

ip netns add ${P}a || fail "ip netns add"
ip netns add ${P}b || fail "ip netns add"
ip link add "$DEV" netns ${P}a type veth peer name "$PEER" netns ${P}b || fail "veth"
$NA ip link set lo up
$NB ip link set lo up
$NA ip link set "$DEV" up
$NB ip link set "$PEER" up
$NA ip addr add 10.77.0.1/24 dev "$DEV"
$NB ip addr add 10.77.0.2/24 dev "$PEER"
$NA ip -6 addr add fd77::1/64 dev "$DEV" nodad
$NB ip -6 addr add fd77::2/64 dev "$PEER" nodad
mkdir -p "$CGROOT" || fail "mkdir $CGROOT"

# An iperf3 server in ${P}b on port $1, one test, bounded in time.
start_server() {
  $NB timeout 30 iperf3 -s -1 -p "$1" >/dev/null 2>&1 &
  STARTED_PIDS="$STARTED_PIDS $!"
  for _ in $(seq 50); do
    $NB ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
    sleep 0.1
  done
  fail "iperf3 server on port $1 did not start"
}

cat >"$STATE_ROOT/send.py" <<'PY'
import socket, sys
fam, port = sys.argv[1], int(sys.argv[2])
tos = int(sys.argv[3], 0) if len(sys.argv) > 3 else None
if fam == "4":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if tos is not None:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    dst = ("10.77.0.2", port)
else:
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    if tos is not None:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, tos)
    dst = ("fd77::2", port)
for _ in range(20):
    s.sendto(b"x" * 200, dst)
PY
SEND="python3 $STATE_ROOT/send.py"

# capture_start NAME FILTER: tcpdump on $PEER (in ${P}b) into $PCAP, at most 40 s;
# returns once it listens. capture_stop: let the last packets in, then stop it.
capture_start() {
  PCAP=$STATE_ROOT/$1.pcap
  $NB timeout 40 tcpdump --immediate-mode -i "$PEER" -nn -U -w "$PCAP" "$2" 2>"$STATE_ROOT/$1.err" &
  TCPDUMP=$!
  STARTED_PIDS="$STARTED_PIDS $TCPDUMP"
  for _ in $(seq 50); do grep -q listening "$STATE_ROOT/$1.err" 2>/dev/null && break; sleep 0.1; done
}
capture_stop() { sleep 0.3; kill -INT $TCPDUMP; wait $TCPDUMP 2>/dev/null; }
pcap_count() { tcpdump -r "$PCAP" -nn "$1" 2>/dev/null | wc -l; }

# Receiver goodput in bits/s from iperf3 -J output on stdin.
goodput() { python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))'; }
