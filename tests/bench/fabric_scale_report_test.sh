#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/fabric_scale_report.py on a made-up run directory whose counters grow
# at known rates, so that every figure has one right value:
#   - the steady window starts 2 s (+1 s for iperf3's whole-second stamps)
#     after the last ring started and ends 1 s before the first flow ended;
#   - the capacity left on a path is the uplink rate minus the higher classes'
#     bytes on the busier of its two links (the spine's port, with storage);
#   - training's share is the scavenger bytes the spines sent over that;
#   - the inference queue is read only while the probe ran;
#   - bench/fabric_scale_runs.sh --report counts the goals.
set -uo pipefail
src=${LANES_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v jq >/dev/null || { echo "SKIP: needs jq"; exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/lanes-fs-report.XXXXXX")
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 - "$out/run" <<'PY' || fail "could not write the run directory"
import json, os, sys
d = sys.argv[1]
os.makedirs(d)
T0 = 1000000.0
open(f"{d}/params", "w").write("seconds=10\nuplink=100mbit\njob_a=t1,t2\njob_b=t3,t4\ntrain_rate=40Mbit\ntrain_ceil=200Mbit\n")
ends = [f"lf{L}/up{S}" for L in (1, 2, 3) for S in (1, 2)] + [f"sp{S}/dn{L}" for L in (1, 2, 3) for S in (1, 2)]
for lab, start, base in (("noload", T0, 1.0), ("nolanes", T0 + 100, 50.0), ("lanes", T0 + 200, 1.2)):
    for r in ("i1", "i2"):
        open(f"{d}/{lab}-{r}.samples", "w").write("\n".join(str(base) for _ in range(100)))
        json.dump({"errors": 0, "timeouts": 0, "scheduled": 100, "ok": 100, "max_send_lag_ms": 0.1}, open(f"{d}/{lab}-{r}.json", "w"))
    open(f"{d}/{lab}-before.time", "w").write(str(start))
    open(f"{d}/{lab}-probe.start", "w").write(str(start + 6))
    open(f"{d}/{lab}-probe.end", "w").write(str(start + 16))
    for when in ("before", "after"):
        with open(f"{d}/{lab}-{when}.txt", "w") as f:
            for e in ends:
                f.write(" ".join(e.split("/")) + (" 0 0 0 0\n" if when == "before" else " 5000 1000 2000 3000\n"))
    if lab == "noload":
        continue
    for j, nodes in (("A", ("t1", "t2")), ("B", ("t3", "t4"))):
        for k, n in enumerate(nodes):
            # rings start at whole seconds 3 and 4 of the scenario, run 16 s
            json.dump({"start": {"timestamp": {"timesecs": int(start) + 3 + k}},
                       "end": {"sum_sent": {"end": 16.0}, "sum_received": {"bits_per_second": 40e6 if j == "A" else 20e6}}},
                      open(f"{d}/{lab}-{j}-{n}.json", "w"))
            json.dump({"start": {"timestamp": {"timesecs": int(start)}}, "end": {"sum_sent": {"end": 24.0}}},
                      open(f"{d}/{lab}-store-{n}.json", "w"))
    with open(f"{d}/{lab}-queues.txt", "w") as f:
        for i in range(0, 100):
            t = start + 0.25 * i
            for e in ends:
                if e.startswith("sp") and e[-1] in "12":
                    r = (2e6, 18e6, 70e6)  # spine to leaf 1-2: requests, storage, training
                elif e.startswith("lf") and e[2] in "12":
                    r = (2e6, 1e6, 75e6)  # leaf 1-2 up: replies, ACKs, training
                else:
                    r = (2e6, 20e6, 0)
                s = [x / 8 * (t - start) for x in r]
                # the inference backlog: 12500 bytes (1 ms at 100 Mbit/s) only outside the probe's window
                q = 0 if start + 6 <= t <= start + 16 else 12500
                f.write(f"{t:.6f} {e} {q} {q} 0 {s[0]:.0f} {s[1]:.0f} {s[2]:.0f}\n")
PY
python3 "$src/bench/fabric_scale_report.py" "$out/run" >"$out/report.txt" 2>&1 || fail "report: $(cat "$out/report.txt")"
cat "$out/report.txt"
s=$out/run/summary.json
# window: last ring stamped at 4 s, +1 +2 = 7 s; first end: 3 + 16 - 1 = 18 s.
jq -e '.lanes.share.window_s == [7, 18]' "$s" >/dev/null || fail "window $(jq -c .lanes.share.window_s "$s")"
# per path: 100 - max(2 + 1, 2 + 18) = 80 Mbit/s left, 70 delivered: 87.5 %, 4 paths.
jq -e '.lanes.share | .paths == 4 and .capacity_mbit == 400 and (.left_mbit - 320 | fabs) < 0.01
    and (.train_mbit - 280 | fabs) < 0.01 and (.share - 0.875 | fabs) < 1e-6
    and (.share_per_second_min - 0.875 | fabs) < 1e-6' "$s" >/dev/null || fail "share $(jq -c .lanes.share "$s")"
jq -e '.lanes.queue_inference.max_ms == 0 and .nolanes.queue_inference.max_ms == 0' "$s" >/dev/null ||
    fail "the queue outside the probe's window was counted: $(jq -c '[.lanes.queue_inference, .nolanes.queue_inference]' "$s")"
jq -e '(.lanes.ratio - 1.2 | fabs) < 1e-6 and .lanes.lost == 0 and (.lanes.jain - 0.9 | fabs) < 1e-6' "$s" >/dev/null ||
    fail "ratio, lost or Jain: $(jq -c '.lanes | [.ratio, .lost, .jain]' "$s")"
bash "$src/bench/fabric_scale_runs.sh" --report "$out/run" "$out/missing" >"$out/table.txt" 2>&1 || fail "runs --report: $(cat "$out/table.txt")"
cat "$out/table.txt"
grep -q '| 2 | failed' "$out/table.txt" || fail "a run without a summary was not listed as failed"
grep -q 'p99 with Lanes <= 1.5x no load: 1 of 2 .*share of the capacity left >= 95 %: 0 of 2; Jain >= 0.95: 0 of 2; no request lost with Lanes: 1 of 2' \
    "$out/table.txt" || fail "goal counts"
# A second run whose no-load p99 is twice the first's: the spread line says so.
mkdir -p "$out/run2"
jq '.noload.p99_ms *= 2' "$s" >"$out/run2/summary.json" || fail "jq"
bash "$src/bench/fabric_scale_runs.sh" --report "$out/run" "$out/run2" >"$out/table2.txt" 2>&1 || fail "runs --report: $(cat "$out/table2.txt")"
grep -q 'no-load p99 between runs: .*(max / min 2.00x, .*within 20 % of the median in 0 of 2 runs' "$out/table2.txt" ||
    fail "the no-load spread: $(grep 'between runs' "$out/table2.txt")"
echo "PASS: steady window 7-18 s, 87.5 % of the capacity left, queue only while the probe ran, goals counted, no-load spread"
