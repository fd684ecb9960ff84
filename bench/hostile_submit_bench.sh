#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Another user's sbatch latency with each hostile policy loaded (#20, "done
# when"): for the shipped policies/default.lua (the baseline, started again
# every few policies) and each tests/hostile/*.lua, a real cluster is started
# with it as the policy (time_budget BUDGET_MS, on_error at its default,
# accept-default; a policy's "-- policy: key = value" lines added to [policy]).
# Then one user ("victim") submits VICTIMS held jobs one after the other,
# first alone ("quiet"), then while another user ("attacker") submits, one
# after the other, held jobs with a 1000-character comment, which set off the
# attacks that get past the load-time check ("attacked").
#
#   bash bench/hostile_submit_bench.sh [VICTIMS=40] [BUDGET_MS=20]
#   HOSTILE_BENCH_POLICIES="a.lua b.lua" to run only some of tests/hostile.
# Needs root and a built tree (LANES_BUILDDIR, default ./build).
#
# Prints, per policy: the victim's client-side sbatch latency (p50, p99) quiet
# and attacked; the ratios attacked/quiet and attacked/baseline (default.lua
# with the same attacker, median over its runs); slurmctld's server time per
# victim RPC (sdiag, by user) and its delay over the baseline's, against
# BUDGET_MS + 1 ms; how many victim jobs the policy did not classify (no
# worker free, queue full: on_error decided, the message says why); what the
# attacker's submissions got and their server time; whether slurmctld refused
# the policy at its start. Figures, not a test: it exits 1 only if a victim's
# sbatch hung or was refused.
# shellcheck source=bench/e2e_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_bench.sh"
victims=${1:-40}
budget_ms=${2:-20}
attacker=$(cluster_test_user) || exit 1
victim=$(LANES_CLUSTER_USER=lanesml cluster_test_user) || exit 1
comment=$(printf 'a%.0s' $(seq 1000))
T=$(mktemp -d -t lhostbench.XXXXXX)
now_us() { local t=${EPOCHREALTIME/[.,]/}; printf '%s\n' "$((10#$t))"; }

# victim_burst: VICTIMS held jobs of the victim; one line each: RC MICROSECONDS
# HOW (classified: the policy answered; unclassified: no worker free, the queue
# full or another policy error, so on_error decided; the message says which).
victim_burst() {
    local i t0 rc out how
    for ((i = 0; i < victims; i++)); do
        t0=$(now_us)
        out=$(cluster_run_as "$victim" timeout 60 sbatch --parsable -H -J "victim-$i" -o /dev/null --wrap true 2>&1)
        rc=$?
        how=classified
        grep -qE 'policy failed|queue is full|no policy worker became free|did not return within' <<<"$out" &&
            how=unclassified
        printf '%s %s %s\n' "$rc" "$(($(now_us) - t0))" "$how"
    done
}
# USER's server time per RPC since the last sdiag -r (sdiag by user).
user_ave() {
    cluster_run_ctl sdiag | awk -v u="$1" '$1 == u { for (i = 1; i <= NF; i++) if ($i ~ /^ave_time:/) { sub("ave_time:", "", $i); print $i } }'
}

run_policy() {  # FILE LABEL -> one result line
    local file=$1 label=$2
    e2e_pre_start() {
        cp -- "$file" "$1/policy.lua" || return 1
        local extra
        extra=$(sed -n 's/^-- policy: //p' "$file" | tr '\n' '\001')
        sed -i -e '/^on_error = "reject"$/d' \
            -e "s|^script = \"policy.lua\"\$|script = \"policy.lua\"\ntime_budget = \"${budget_ms}ms\"\n${extra//$'\001'/\\n}|" \
            "$1/lanes.toml"
    }
    E2E_MODE=offpeak e2e_start_cluster >/dev/null 2>&1 || { echo "$label cluster-failed"; return 0; }
    # Warm up the victim's path (workers, user-name cache); a policy that
    # failed its check at slurmctld's start shows in the jobs' messages.
    local i warm="" load_refused=no
    for i in 1 2 3; do warm+=$(cluster_run_as "$victim" sbatch -H -J warm -o /dev/null --wrap true 2>&1); done
    grep -q 'the policy did not load' <<<"$warm" && load_refused=yes
    cluster_run_ctl sdiag -r >/dev/null
    victim_burst >"$T/quiet"
    local quiet_ave
    quiet_ave=$(user_ave "$victim")
    cluster_run_ctl sdiag -r >/dev/null
    # The attacker, one submission after the other until the victims are done
    # (bounded: at most 300 submissions).
    rm -f "$T/stop"
    (
        n=0
        while [[ ! -e $T/stop ]] && ((n++ < 300)); do
            out=$(cluster_run_as "$attacker" timeout 60 sbatch --parsable -H -J hostile-input --comment="$comment" \
                -o /dev/null --wrap true 2>&1)
            rc=$?
            # on_error = accept-default: a failed policy still gets the job
            # accepted, with the reason in the message.
            if grep -q 'did not return within the time budget' <<<"$out"; then echo killed
            elif grep -qE 'queue is full|no policy worker became free' <<<"$out"; then echo queue
            elif grep -qE 'policy\.lua:[0-9]+|budget exceeded|the policy did not load' <<<"$out"; then echo policy-error
            elif ((rc == 0)); then echo classified
            else echo "refused"; fi
        done
    ) >"$T/attacker" 2>&1 &
    local apid=$!
    sleep 0.3  # the attacker's first job is in flight
    victim_burst >"$T/attacked"
    local attacked_ave attacker_ave
    attacked_ave=$(user_ave "$victim")
    attacker_ave=$(user_ave "$attacker")
    touch "$T/stop"
    wait "$apid"
    local attack_summary
    attack_summary=$(sort "$T/attacker" | uniq -c | awk '{ printf "%s%s=%s", (NR > 1 ? "," : ""), $2, $1 }')
    cluster_stop >/dev/null 2>&1
    python3 - "$label" "$load_refused" "${quiet_ave:-0}" "${attacked_ave:-0}" \
        "${attack_summary:-none},server=${attacker_ave:-0}" "$T/quiet" "$T/attacked" <<'PY'
import sys
label, refused, qave, aave, attack, qf, af = sys.argv[1:]
def load(f):
    rows = [l.split() for l in open(f) if l.strip()]
    bad = sum(1 for r in rows if r[0] != "0")
    unclassified = sum(1 for r in rows if r[2] != "classified")
    v = sorted(int(r[1]) for r in rows if r[0] == "0")
    pct = lambda p: v[min(len(v) - 1, int(p * len(v)))] if v else 0
    return pct(0.5), pct(0.99), bad, unclassified
q50, q99, qbad, qun = load(qf)
a50, a99, abad, aun = load(af)
print(label, refused, q50, q99, a50, a99, qave, aave, qbad + abad, f"{attack},victims_unclassified={qun}+{aun}")
PY
}

policies=${HOSTILE_BENCH_POLICIES:-$(cd "$LANES_SRCDIR/tests/hostile" && ls -- *.lua)}
echo "# victim: $victims sequential held jobs quiet, then attacked; time_budget ${budget_ms}ms; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
results=$(
    k=0
    run_policy "$LANES_SRCDIR/policies/default.lua" default.lua
    for p in $policies; do
        run_policy "$LANES_SRCDIR/tests/hostile/$p" "$p"
        if ((++k % 6 == 0)); then run_policy "$LANES_SRCDIR/policies/default.lua" default.lua; fi
    done
    ((k % 6)) && run_policy "$LANES_SRCDIR/policies/default.lua" default.lua
)
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$T"
printf '%s\n' "$results"
python3 - "$results" "$budget_ms" <<'PY'
import statistics, sys
budget = float(sys.argv[2])
rows = [l.split() for l in sys.argv[1].splitlines() if len(l.split()) == 10]
base = [r for r in rows if r[0] == "default.lua"]
med = lambda i: statistics.median(int(r[i]) for r in base) if base else 0
b50, b99, bave = med(4), med(5), med(7)
print(f"baseline default.lua attacked (median of {len(base)} runs): sbatch p50 {b50/1000:.1f} ms, p99 {b99/1000:.1f} ms, "
      f"slurmctld {bave/1000:.1f} ms per victim RPC")
print("policy | load | quiet p50 ms | attacked p50 / p99 ms | attacked/quiet p50 | vs baseline p50 / p99 | "
      "slurmctld ms quiet / attacked | server delay vs baseline ms | <= budget+1 | attacker's submissions")
failed = 0
for label, refused, q50, q99, a50, a99, qave, aave, bad, attack in rows:
    q50, q99, a50, a99, qave, aave = int(q50), int(q99), int(a50), int(a99), int(qave), int(aave)
    delay = (aave - bave) / 1000
    failed |= int(bad) > 0
    print(f"{label} | {'refused' if refused == 'yes' else 'ok'} | {q50/1000:.1f} | {a50/1000:.1f} / {a99/1000:.1f} | "
          f"{a50/q50 if q50 else 0:.2f} | {a50/b50 if b50 else 0:.2f} / {a99/b99 if b99 else 0:.2f} | "
          f"{qave/1000:.1f} / {aave/1000:.1f} | {delay:.1f} | {'yes' if delay <= budget + 1 else 'NO'} | {attack}"
          f"{'  VICTIM REFUSED/HUNG: ' + bad if int(bad) else ''}")
sys.exit(failed)
PY
