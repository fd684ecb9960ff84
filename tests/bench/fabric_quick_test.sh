#!/usr/bin/env bash
# The latency bench in CI size: floor, no QoS and Lanes-style settings (node cap
# + tuned GSO + CS1 marks + DSCP-aware switch) on bench/fabric.sh's fabric, and
# assertions on what they must show:
#   - every inference request is answered in every scenario;
#   - without QoS the p99 is far above the floor (>= 10x and >= 5 ms): the
#     fabric really is congested by training;
#   - with Lanes-style settings the p99 stays near the floor (< 3x the floor,
#     or < 2 ms on a noisy machine);
#   - and training keeps >= 80% of the capacity inference leaves it.
set -uo pipefail
if (($(id -u) != 0)); then
    echo "SKIP: needs root (network namespaces, tc, nft)"
    exit 77
fi
src=${LANES_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${LANES_BUILDDIR:-.}
out=$(mktemp "${TMPDIR:-/tmp}/lanes-bench-quick.XXXXXX.json")
trap 'rm -f "$out"' EXIT

LANES_BUILDDIR=$build timeout 120 bash "$src/bench/run_latency_bench.sh" --quick --scenarios floor,noqos,both \
    --json "$out"
rc=$?
((rc == 0)) || { echo "FAIL: run_latency_bench.sh exited $rc"; exit 1; }

python3 - "$out" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
s = j["summary"]
fails = 0
def check(name, ok, detail):
    global fails
    print("%s: %s (%s)" % ("ok" if ok else "FAIL", name, detail))
    fails += 0 if ok else 1
for name in ("floor", "noqos", "both"):
    v = s.get(name)
    check("%s measured, every request answered" % name,
          v is not None and v["scheduled"] > 0 and v["ok"] == v["scheduled"] and not v["timeouts"] and not v["errors"],
          "missing" if v is None else "%d/%d ok, %d timeouts, %d errors" % (v["ok"], v["scheduled"], v["timeouts"],
                                                                          v["errors"]))
if fails:
    sys.exit(1)
floor, noqos, both = s["floor"]["p99_ms"], s["noqos"]["p99_ms"], s["both"]["p99_ms"]
check("floor p99 is sane", 0 < floor < 5, "%.3f ms" % floor)
check("no QoS: p99 far above the floor", noqos >= 10 * floor and noqos >= 5,
      "%.3f ms = %.1fx the floor %.3f ms" % (noqos, noqos / floor, floor))
check("with Lanes: p99 near the floor", both < 3 * floor or both < 2,
      "%.3f ms = %.2fx the floor %.3f ms" % (both, both / floor, floor))
t, left = s["both"]["train_mbit"], s["both"]["leftover_mbit"]
check("with Lanes: training keeps >= 80% of the leftover", t is not None and t >= 0.8 * left,
      "%s of %.1f Mbit/s" % ("none" if t is None else "%.1f" % t, left))
check("no QoS: training saturates the link", s["noqos"]["train_mbit"] is not None and
      s["noqos"]["train_mbit"] >= 0.8 * s["noqos"]["leftover_mbit"],
      "%s Mbit/s" % s["noqos"]["train_mbit"])
sys.exit(1 if fails else 0)
EOF
