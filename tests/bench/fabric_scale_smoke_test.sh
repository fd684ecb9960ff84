#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/fabric_scale.sh in CI size (6 nodes: 4 training, 2 inference; 3 s per
# scenario), so that it cannot rot. Asserts behaviour, never rates or
# latencies:
#   - the training jobs ran through Slurm with the class (job_submit/lanes put
#     them in the training partition, spank_lanes told every task
#     LANES_CLASS=training) and their HTB class on t1 carried bytes;
#   - the inference probe got replies from both replicas, no request lost;
#   - training crossed both spines (ECMP: packets on both of leaf 1's uplinks
#     and both spines' ports) and its bytes went through the uplinks'
#     scavenger class (CS1 marks);
#   - the inference replies (AF41, spank_lanes' marks on i1 and i2) went
#     through the priority class of the leaf 1-2 uplinks;
#   - the report found the rings' steady window and counted training's bytes
#     in it (the share of the capacity left is computed, whatever its value).
set -uo pipefail
if (($(id -u) != 0)); then
    echo "SKIP: needs root (Slurm cluster, network namespaces, tc)"
    exit 77
fi
src=${LANES_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${LANES_BUILDDIR:-.}
build=$(cd "$build" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/lanes-fabric-smoke.XXXXXX")
trap 'rm -rf "$out"' EXIT
LANES_BUILD_DIR=$build timeout --foreground -k 30 300 bash "$src/bench/fabric_scale.sh" --nodes 6 --seconds 3 --out "$out" >"$out/run.log" 2>&1
rc=$?
((rc == 77)) && { echo "SKIP: $(tail -1 "$out/run.log")"; exit 77; }
cat "$out/run.log"
((rc == 0)) || { echo "FAIL: fabric_scale.sh exited $rc"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }

grep -q 'JobName=train-A Partition=training' "$out/lanes-jobs.txt" &&
    grep -q 'JobName=train-B Partition=training' "$out/lanes-jobs.txt" || fail "training jobs not in the training partition: $(cat "$out/lanes-jobs.txt")"
grep -q 'JobName=serve-a Partition=inference' "$out/lanes-jobs.txt" || fail "inference job not in the inference partition"
n=0
for f in "$out"/lanes-[AB]-t*.env; do
    [[ -e $f ]] || continue
    grep -qx 'LANES_CLASS=training' "$f" || fail "$(basename "$f"): $(cat "$f")"
    n=$((n + 1))
done
((n == 4)) || fail "$n of 4 training tasks reported their Lanes class"
awk '$1 == "class" { c = $3; p = $5 } $1 == "Sent" && c ~ /^1a4e:/ && c !~ /:(1|fffe)$/ && p == "1a4e:1" && $2 > 100000 { ok = 1 }
    END { exit !ok }' "$out/lanes-t1-classes.txt" || fail "no job class on t1 carried the training bytes: $(cat "$out/lanes-t1-classes.txt")"

for r in i1 i2; do
    read -r ok lost < <(jq -r '"\(.ok) \(.errors + .timeouts + (.scheduled - .ok - .errors - .timeouts))"' "$out/lanes-$r.json")
    ((ok > 0 && lost == 0)) || fail "inference replica $r: $ok replies, $lost lost"
done

# Uplink counters: "lfL upS tx_packets prio_bytes be_bytes scav_bytes", before and after.
delta() {  # delta NS DEV FIELD (1-based after the name columns)
    local a b
    a=$(awk -v n="$1" -v d="$2" -v f="$3" '$1 == n && $2 == d { print $(2 + f) }' "$out/lanes-after.txt")
    b=$(awk -v n="$1" -v d="$2" -v f="$3" '$1 == n && $2 == d { print $(2 + f) }' "$out/lanes-before.txt")
    echo $((${a:-0} - ${b:-0}))
}
for d in up1 up2; do
    (($(delta lf1 "$d" 1) > 1000)) || fail "leaf 1's $d sent $(delta lf1 "$d" 1) packets: training did not use both spines"
done
for sp in sp1 sp2; do
    (($(delta "$sp" dn2 1) > 1000)) || fail "$sp forwarded $(delta "$sp" dn2 1) packets to leaf 2: no ECMP"
done
scav=0 prio=0
for l in lf1 lf2; do
    for d in up1 up2; do
        scav=$((scav + $(delta "$l" "$d" 4)))
        prio=$((prio + $(delta "$l" "$d" 2)))
    done
done
((scav > 1000000)) || fail "training's CS1 bytes did not reach the scavenger class ($scav bytes)"
((prio > 10000)) || fail "the inference replies' AF41 did not reach the priority class ($prio bytes)"
jq -e '.lanes.share.window_len_s >= 1 and .lanes.share.train_mbit > 0 and .lanes.share.left_mbit > 0' "$out/summary.json" >/dev/null ||
    fail "no share of the capacity left: $(jq -c '.lanes.share' "$out/summary.json" 2>&1)"
echo "PASS: jobs classified through Slurm, no request lost, ECMP over both spines, CS1 $scav bytes in scavenger, AF41 $prio bytes in priority, training's share $(jq -r '.lanes.share.share * 100 | floor' "$out/summary.json") % of the capacity left"
