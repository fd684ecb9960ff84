#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The README's demo command works: contrib/demo.sh (with this build, short
# phases) runs to the end, prints its result table, shows the switch putting
# inference first and training last only with Lanes, and leaves no namespace behind.
set -uo pipefail
if ((EUID != 0)); then
    echo "SKIP: $(basename "$0") needs root (the demo starts Slurm daemons and network namespaces)"
    exit 77
fi
: "${LANES_SRCDIR:?run through make check}" "${LANES_BUILDDIR:?run through make check}"
out=$(DEMO_NO_BUILD=1 LANES_BUILD_DIR=$LANES_BUILDDIR DEMO_SECONDS=6 timeout --foreground -k 30 300 bash "$LANES_SRCDIR/contrib/demo.sh" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -25
status=0
check() { if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; status=1; fi; }
check "demo exits 0 (rc=$rc)" test "$rc" -eq 0
check "dry-run shows the peak deferral" grep -q 'peak: messages: *lanes: training job deferred' <<<"$out"
check "lanesctl status on train1 shows the training job" grep -qE '^ +[0-9]+ +training +fab0' <<<"$out"
row() { grep -E "^ +$1 +[0-9.]+ +[0-9.]+ " <<<"$out" | grep -F . | head -1 | awk '{print $(NF-3)}'; }  # p99 column
p99_without=$(row "training without Lanes")
p99_with=$(row "training with Lanes")
check "result table has both p99 figures ($p99_without / $p99_with ms)" test -n "$p99_without" -a -n "$p99_with"
# What the switch counted per class (priority, best effort, scavenger) and the
# training payload that arrived, per phase. Without Lanes everything is best
# effort; with Lanes the inference replies (AF41) go first and every training
# byte (CS1) is scavenger. The p99 figures depend on the machine's load: printed
# by the demo as ratios, not asserted here.
uplink() { grep -E "^ +$1 +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+$" <<<"$out" | tail -1 | awk '{print $(NF-3), $(NF-2), $(NF-1), $NF}'; }
read -r w_prio w_be w_scav w_got <<<"$(uplink "training without Lanes")"
read -r l_prio l_be l_scav l_got <<<"$(uplink "training with Lanes")"
check "without Lanes: training ($w_got bytes) crossed the uplink as best effort, nothing prioritised or scavenger" \
    test "${w_got:-0}" -gt 0 -a "${w_be:-0}" -ge "${w_got:-1}" -a "${w_prio:-1}" -eq 0 -a "${w_scav:-1}" -eq 0
check "with Lanes: every training byte ($l_got) crossed the uplink as scavenger ($l_scav)" \
    test "${l_got:-0}" -gt 0 -a "${l_scav:-0}" -ge "${l_got:-1}"
check "with Lanes: the inference replies (AF41) crossed in the priority class ($l_prio bytes)" \
    test "${l_prio:-0}" -gt 0
# spank_lanes' burst bound (the demo's gso_burst = "250us" against a 94 Mbit/s
# ceil): while the training job ran, its NIC's GSO size was below Linux's 64 KB,
# and the job was an element of the typed prio map.
gso=$(grep -oE 'fab0 gso_max_size [0-9]+' <<<"$out" | head -1 | awk '{print $3}')
check "spank_lanes bounded the training NIC's GSO size (gso_max_size ${gso:-not shown})" \
    test "${gso:-65536}" -lt 65536
check "the training job is an element of the nft prio map on train1" \
    grep -qE 'nft: .*job_[0-9]+"? : 1a4e:[0-9a-f]+' <<<"$out"
# Beside each p99: its bootstrap CI, and the queueing delay inference met in the
# switch, sampled from the uplink's qdiscs while the probe ran: a row per phase
# with samples in it (which class carried the replies is what the uplink's
# byte counters above check).
check "each p99 with a bootstrap CI" grep -qE '^ +training with Lanes +[0-9.]+ \([0-9.]+-[0-9.]+\) +x[0-9.]+ \(' <<<"$out"
qrow() { grep -E "^ +$1 +$2 +[0-9.]+ +[0-9.]+ +[0-9.]+ " <<<"$out" | head -1; }
for q in "no load|best effort" "training without Lanes|best effort" "training with Lanes|priority"; do
    r=$(qrow "${q%%|*}" "${q#*|}")
    check "switch queue sampled while the probe ran, ${q%%|*} ($(awk '{print $NF}' <<<"$r") samples)" \
        test -n "$r" -a "$(awk '{print $NF}' <<<"${r:-x 0}")" -gt 0
done
check "the summary prints the p99 ratios" grep -qE 'inference p99 vs no load: without Lanes x[0-9.]+, with Lanes x[0-9.]+' <<<"$out"
# Other work on the machine may create namespaces meanwhile: look only for the
# demo's own (fabric lfPID..., cluster lcPID...; both printed or derived from
# the fabric's prefix line).
fab=$(grep -oE 'prefix lf[0-9a-z]+' <<<"$out" | head -1 | awk '{print $2}')
pid=$(grep -oE '^lf[0-9]+' <<<"$fab")
pid=${pid#lf}
left=$(ip netns list | awk '{print $1}' | grep -E "^(${fab:-none}|lc${pid:-none}[-r])" || true)
check "torn down: none of the demo's namespaces left (fabric ${fab:-?}: ${left:-none})" test -n "$fab" -a -z "$left"
exit $status
