#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# inference_probe end to end on loopback in a fresh network namespace: every
# scheduled request is answered, the p99 is sane, IPv4 and IPv6 both work, and
# --dscp really marks the client's packets (counted by nftables on lo).
set -uo pipefail
if (($(id -u) != 0)); then
    echo "SKIP: needs root (creates a network namespace)"
    exit 77
fi
build=${LANES_BUILDDIR:-.}
probe=$build/bench/inference_probe
[[ -x $probe ]] || { echo "FAIL: $probe not built"; exit 1; }

ns=""
for try in 0 1 2 3 4; do
    cand=lpb$$r$RANDOM
    if ip netns add "$cand" 2>/dev/null; then ns=$cand; break; fi
done
[[ -n $ns ]] || { echo "FAIL: cannot create a network namespace"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lanes-probe.XXXXXX")
server_pid=""
cleanup() {
    [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    ip netns delete "$ns" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
in_ns() { nsenter --net="/run/netns/$ns" -- "$@"; }

in_ns ip link set lo up || { echo "FAIL: lo up"; exit 1; }
in_ns nft -f - <<'EOF' || { echo "FAIL: nft"; exit 1; }
table inet probe {
    chain out {
        type filter hook output priority 0; policy accept;
        tcp dport 17771 ip dscp ef counter
        tcp dport 17771 ip6 dscp ef counter
    }
}
EOF

fails=0
check() {  # check NAME PYTHON-EXPR-ON-j
    if python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$3"; then
        echo "ok: $1"
    else
        echo "FAIL: $1: $(cat "$3")"
        fails=$((fails + 1))
    fi
}

nsenter --net="/run/netns/$ns" -- "$probe" serve --listen '[::]:17771' --exit-after 15 >"$tmp/serve.out" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q 'serving on' "$tmp/serve.out" 2>/dev/null && break; sleep 0.05; done
grep -q 'serving on' "$tmp/serve.out" || { echo "FAIL: server did not start: $(cat "$tmp/serve.out")"; exit 1; }

# IPv4 (a v4-mapped connection to the dual-stack listener), marked EF.
in_ns timeout 10 "$probe" load --connect 127.0.0.1:17771 --rate 500 --duration 2 --dscp EF --json >"$tmp/v4.json"
echo "ipv4: $(cat "$tmp/v4.json")"
check "ipv4: all 1000 answered" "j['scheduled']==1000 and j['ok']==1000 and j['errors']==0 and j['timeouts']==0" "$tmp/v4.json"
check "ipv4: consistent latencies (0 < p50 <= p99 <= max)" "0 < j['p50_ms'] <= j['p99_ms'] <= j['max_ms']" "$tmp/v4.json"
check "ipv4: dscp 46 reported" "j['dscp']==46" "$tmp/v4.json"

# IPv6, unmarked, bigger replies asked for by the client.
in_ns timeout 10 "$probe" load --connect '[::1]:17771' --rate 300 --duration 1 --reply-bytes 4000 --json >"$tmp/v6.json"
echo "ipv6: $(cat "$tmp/v6.json")"
check "ipv6: all 300 answered" "j['scheduled']==300 and j['ok']==300 and j['errors']==0 and j['timeouts']==0" "$tmp/v6.json"
check "ipv6: consistent latencies (0 < p50 <= p99 <= max)" "0 < j['p50_ms'] <= j['p99_ms'] <= j['max_ms']" "$tmp/v6.json"

# Only the IPv4 run was marked: the v4 rule counted packets, the v6 rule none.
counters=$(in_ns nft list chain inet probe out | sed -n 's/.*dscp ef counter packets \([0-9]*\).*/\1/p' | tr '\n' ' ')
read -r v4_marked v6_marked <<<"$counters"
if ((${v4_marked:-0} >= 1000 && ${v6_marked:-1} == 0)); then
    echo "ok: --dscp EF marks the client's packets ($v4_marked marked over IPv4, $v6_marked over IPv6)"
else
    echo "FAIL: dscp counters: '$counters' (want >= 1000 IPv4, 0 IPv6)"
    fails=$((fails + 1))
fi

# No server: a clear error and exit 1, within the time bound.
if in_ns timeout 10 "$probe" load --connect 127.0.0.1:17772 --rate 10 --duration 1 2>"$tmp/refused.err"; then
    echo "FAIL: load without a server succeeded"
    fails=$((fails + 1))
elif grep -q 'Connection refused' "$tmp/refused.err"; then
    echo "ok: no server -> $(cat "$tmp/refused.err")"
else
    echo "FAIL: no server: $(cat "$tmp/refused.err")"
    fails=$((fails + 1))
fi

# The server stops on SIGTERM.
kill "$server_pid"
if wait "$server_pid"; then echo "ok: server exits 0 on SIGTERM"; else echo "FAIL: server exit status $?"; fails=$((fails + 1)); fi
server_pid=""
((fails == 0))
