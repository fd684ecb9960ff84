# SPDX-License-Identifier: GPL-2.0-or-later
# Shared setup for the node-shaper network tests: two namespaces joined by a veth
# pair, unique per run, deleted on exit. Sourced by tests/net/shaper_*_test.sh.
#
#   $P          prefix (lt<pid>); namespaces ${P}a (the node) and ${P}b (the peer)
#   $DEV/$PEER  veth ends: $DEV in ${P}a (shaped), $PEER in ${P}b
#   10.77.0.1/24 fd77::1/64 on $DEV, 10.77.0.2 fd77::2 on $PEER
#   tool ARGS   shaper_tool in ${P}a (nsenter --net: /sys/fs/cgroup stays visible)
#   NA/NB       command prefixes to run in ${P}a / ${P}b
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
STATE_ROOT=$(mktemp -d /tmp/${P}-state.XXXXXX)
STATE=$STATE_ROOT/state   # the state dirs registry (.lanes-state-dirs) lands in $STATE_ROOT
mkdir -p "$STATE"
STARTED_PIDS=""

cleanup() {
  for pid in $STARTED_PIDS; do kill "$pid" 2>/dev/null; done
  for pid in $STARTED_PIDS; do wait "$pid" 2>/dev/null; done
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

tool() { $NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" "$@"; }

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

# Receiver goodput in bits/s from iperf3 -J output on stdin.
goodput() { python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))'; }
