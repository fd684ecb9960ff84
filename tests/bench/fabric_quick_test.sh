#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The latency bench in CI size: floor, no QoS and Lanes-style settings by hand
# (node cap + bounded GSO + CS1 marks + DSCP-aware switch) on bench/fabric.sh's
# fabric, and assertions on what the kernel counted, never on rates or
# latencies (those depend on the machine's load; the bench prints them as
# ratios to the floor):
#   - the probe ran in every scenario: requests answered, no errors;
#   - floor: no training bytes reached the far side;
#   - no QoS: training crossed the uplink through the switch's single FIFO and
#     no node cap existed;
#   - with the settings by hand: every training byte crossed the uplink in the
#     scavenger class (CS1 marks), the inference replies in best effort, the
#     node caps carried the training bytes and throttled them, and the capped
#     hosts' gso_max_size was the configured bound;
#   - with the real plugins (scenario lanes: an inference job and a 2-node
#     training job submitted through Slurm to a cluster on the same fabric):
#     spank_lanes' marks put every training byte in the scavenger class and
#     the inference replies (AF41) in the priority class, and the training
#     job's HTB classes carried its bytes and throttled them.
set -uo pipefail
if (($(id -u) != 0)); then
    echo "SKIP: needs root (network namespaces, tc, nft)"
    exit 77
fi
src=${LANES_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${LANES_BUILDDIR:-.}
out=$(mktemp "${TMPDIR:-/tmp}/lanes-bench-quick.XXXXXX.json")
trap 'rm -f "$out"' EXIT

LANES_BUILDDIR=$build timeout --foreground -k 30 300 bash "$src/bench/run_latency_bench.sh" --quick --scenarios floor,noqos,both,lanes \
    --json "$out"
rc=$?
((rc == 0)) || { echo "FAIL: run_latency_bench.sh exited $rc"; exit 1; }

python3 - "$out" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
s = j["summary"]
runs = {r["scenario"]: r for r in j["runs"]}
fails = 0
def check(name, ok, detail):
    global fails
    print("%s: %s (%s)" % ("ok" if ok else "FAIL", name, detail))
    fails += 0 if ok else 1
for name in ("floor", "noqos", "both", "lanes"):
    v = s.get(name)
    check("%s measured: requests answered, no errors" % name,
          v is not None and v["scheduled"] > 0 and v["ok"] > 0 and v["ok"] + v["timeouts"] == v["scheduled"]
          and not v["errors"],
          "missing" if v is None else "%d/%d ok, %d timeouts, %d errors" % (v["ok"], v["scheduled"], v["timeouts"],
                                                                          v["errors"]))
if fails or not all(n in runs for n in ("floor", "noqos", "both", "lanes")):
    sys.exit(1)
floor, noqos, both, lanes = runs["floor"], runs["noqos"], runs["both"], runs["lanes"]
up = lambda r, c: r.get("uplink_classes", {}).get(c, 0)
check("floor: no training bytes at the far side", floor["train_bytes"] == 0, "%s bytes" % floor["train_bytes"])
check("no QoS: training crossed the uplink", noqos["train_bytes"] > 0, "%s payload bytes" % noqos["train_bytes"])
check("no QoS: one FIFO class on the uplink carried it all",
      set(noqos["uplink_classes"]) == {"1:20"} and up(noqos, "1:20") >= noqos["train_bytes"],
      str(noqos["uplink_classes"]))
check("no QoS: no node cap on the training hosts", noqos["cap_bytes"] == 0 and noqos["gso_max_size"] == 65536,
      "cap bytes %s, gso_max_size %s" % (noqos["cap_bytes"], noqos["gso_max_size"]))
check("by hand: training crossed the uplink", both["train_bytes"] > 0, "%s payload bytes" % both["train_bytes"])
check("by hand: every training byte went through the switch's scavenger class (CS1)",
      up(both, "1:30") >= both["train_bytes"],
      "scavenger %d bytes >= training payload %d" % (up(both, "1:30"), both["train_bytes"]))
check("by hand: the inference replies went through best effort, ahead of training",
      up(both, "1:20") >= both["inference_wire_bytes"] > 0,
      "best effort %d bytes, inference %d bytes on the wire" % (up(both, "1:20"), both["inference_wire_bytes"]))
check("by hand: the node caps carried the training and throttled it",
      both["cap_bytes"] >= both["train_bytes"] and both["cap_overlimits"] > 0,
      "cap classes %d bytes, %d overlimits" % (both["cap_bytes"], both["cap_overlimits"]))
check("by hand: gso_max_size bounded on the capped hosts", str(both["gso_max_size"]) == str(j["gso"]),
      "%s (configured %s)" % (both["gso_max_size"], j["gso"]))
check("real plugins: the Slurm training job crossed the uplink", lanes["train_bytes"] > 0,
      "%s payload bytes (job %s)" % (lanes["train_bytes"], lanes.get("job")))
check("real plugins: every training byte went through the scavenger class (spank_lanes' CS1)",
      up(lanes, "1:30") >= lanes["train_bytes"],
      "scavenger %d bytes >= training payload %d" % (up(lanes, "1:30"), lanes["train_bytes"]))
# All but the handshake: a SYN-ACK leaves from the listener's request socket,
# which nftables' "socket cgroupv2" does not see as the job's (one per connection).
check("real plugins: the inference job's replies went through the priority class (AF41)",
      lanes["inference_wire_bytes"] > 0 and
      up(lanes, "1:10") >= lanes["inference_wire_bytes"] - 100 * j["connections"],
      "priority %d bytes, inference %d bytes on the wire" % (up(lanes, "1:10"), lanes["inference_wire_bytes"]))
check("real plugins: the training job's HTB classes carried and throttled it",
      lanes["cap_bytes"] >= lanes["train_bytes"] and lanes["cap_overlimits"] > 0,
      "job classes %d bytes, %d overlimits" % (lanes["cap_bytes"], lanes["cap_overlimits"]))
# Figures, not assertions: they depend on the machine's load.
f = s["floor"]["p99_ms"]
print("figures: p99 floor %.3f ms, no QoS %.1fx, by hand %.2fx, real plugins %.2fx; training with the real plugins "
      "%.0f%% of the leftover" % (f, s["noqos"]["p99_ms"] / f, s["both"]["p99_ms"] / f, s["lanes"]["p99_ms"] / f,
                                   100 * (s["lanes"]["train_vs_leftover"] or 0)))
sys.exit(1 if fails else 0)
EOF
