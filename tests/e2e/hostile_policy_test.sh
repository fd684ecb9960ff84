#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The hostile-policy corpus (tests/hostile/*.lua) live in a real slurmctld:
# each policy is pushed as the running policy (its `-- policy:` lines added to
# lanes.toml's [policy] first); then a user submits a job with a
# 1000-character comment (which triggers the attacks that pass the load-time
# self-check) while another user submits ordinary jobs and sinfo/squeue are
# called. Asserted: every submission is answered, slurmctld keeps serving, and
# a policy that failed says so with the policy's file:line in slurmctld's log.
# Submission latencies are printed as ratios to the benign policy's, never
# asserted (generous timeouts only catch hangs).
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
E2E_POLICY_TIME_BUDGET= E2E_MODE=offpeak e2e_start_cluster
user=$(cluster_test_user)
policy=$CLUSTER_CONF_DIR/policy.lua
toml=$CLUSTER_CONF_DIR/lanes.toml
ctl_log=$(cluster_log slurmctld)
comment=$(printf 'a%.0s' $(seq 1000))
LIMIT=120  # seconds: only a hang gets near it
VICTIMS=5
# What a policy stopped by its worker's deadline (no line to name) says.
killed='policy\.lua: (classify\(\) did not return within the time budget|policy worker .* did not load the policy within)'

now_us() { local t=${EPOCHREALTIME/[.,]/}; printf '%s\n' "$((10#$t))"; }
reloads() { grep -cE 'lanes: (reloaded|reload failed)' "$ctl_log"; }

# replace FILE TARGET: make FILE the content of TARGET; waits for slurmctld's
# reload verdict.
replace() {
    local before
    before=$(reloads)
    sleep 1.1  # a rewrite within the same second is still seen (ns mtime), but keep it clear
    cp "$1" "$2.new" && mv "$2.new" "$2"
    for _ in $(seq 100); do (($(reloads) > before)) && return 0; sleep 0.1; done
    return 1
}
push() { replace "$1" "$policy"; }

# configure_for FILE: the running lanes.toml becomes the test's own, with
# FILE's `-- policy: key = value` lines added to [policy] (the keys an attack
# needs to reach the bound it is about, as in lanesctl_hostile_test).
base_toml=$(mktemp)
cp "$toml" "$base_toml"
configure_for() {
    local want extra
    want=$(mktemp)
    extra=$(sed -n 's/^-- policy: //p' "$1")
    awk -v extra="$extra" '{ print } $0 == "[policy]" && extra != "" { print extra }' "$base_toml" >"$want"
    if cmp -s "$want" "$toml"; then
        rm -f "$want"
        return 0
    fi
    replace "$want" "$toml"
    local rc=$?
    rm -f "$want"
    return "$rc"
}

# victims: VICTIMS held jobs of root, one after the other; prints their
# latencies in microseconds (one a line) or "hang"/"refused".
victims() {
    local i t0 out
    for i in $(seq "$VICTIMS"); do
        t0=$(now_us)
        if out=$(timeout "$LIMIT" nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" \
            env SLURM_CONF="$CLUSTER_CONF" sbatch --parsable --hold -J "infer-victim-$i" -o /dev/null \
            --wrap true 2>&1); then
            echo "$(($(now_us) - t0))"
        elif (($? == 124)); then
            echo hang
        else
            echo "refused: $out"
        fi
    done
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : 0) }'; }

benign=$(mktemp)
cp "$policy" "$benign"
base=$(victims | median)
e2e_check "victims answered under the benign policy (median ${base} us)" test "$base" -gt 0

ran=0
for hostile in "$LANES_SRCDIR"/tests/hostile/*.lua; do
    name=$(basename "$hostile")
    ran=$((ran + 1))
    if ! configure_for "$hostile"; then
        e2e_fail "$name: slurmctld never reported a reload of its [policy] keys"
        continue
    fi
    lines_before=$(wc -l <"$ctl_log")
    if ! push "$hostile"; then
        e2e_fail "$name: slurmctld never reported a reload of it"
        continue
    fi
    # The attacker, in the background; victims and status queries meanwhile.
    attacker_out=$(mktemp)
    (
        a0=$(now_us)
        cluster_run_as "$user" timeout "$LIMIT" sbatch --parsable -J hostile-input --comment="$comment" \
            -o /dev/null --wrap true
        echo "rc=$?"
        echo "us=$(($(now_us) - a0))"
    ) >"$attacker_out" 2>&1 &
    attacker=$!
    lat=$(victims)
    sinfo_ok=0 squeue_ok=0
    timeout "$LIMIT" nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" env SLURM_CONF="$CLUSTER_CONF" sinfo -h >/dev/null 2>&1 &&
        sinfo_ok=1
    timeout "$LIMIT" nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" env SLURM_CONF="$CLUSTER_CONF" squeue -h >/dev/null 2>&1 &&
        squeue_ok=1
    wait "$attacker"
    out=$(cat "$attacker_out")
    attacker_us=$(sed -n 's/^us=//p' <<<"$out")
    rm -f "$attacker_out"

    e2e_check "$name: the attacker's submission was answered ($(tr '\n' ' ' <<<"$out" | cut -c1-160))" \
        bash -c "! grep -qx 'rc=124' <<<\"\$1\" && grep -qE '^[0-9]+|error:' <<<\"\$1\"" _ "$out"
    e2e_check "$name: every victim submission was answered" bash -c "! grep -qE 'hang|refused' <<<\"\$1\"" _ "$lat"
    e2e_check "$name: sinfo and squeue kept answering" test "$sinfo_ok$squeue_ok" = 11
    new_log=$(tail -n +"$((lines_before + 1))" "$ctl_log")
    if grep -q 'lanes: reload failed' <<<"$new_log"; then
        grep -m1 'lanes: reload failed' <<<"$new_log" | cut -c1-300 | sed "s/^/note: $name: /"
        e2e_check "$name: the refused reload names policy.lua:LINE (or the load deadline)" \
            grep -qE "policy\.lua:[0-9]+|$killed" <<<"$new_log"
    elif grep -q 'error:' <<<"$out"; then
        e2e_check "$name: the policy error reached the user with policy.lua:LINE (or the budget)" \
            grep -qE "policy\.lua:[0-9]+|$killed" <<<"$out"
        e2e_check "$name: slurmctld logged the policy error with policy.lua:LINE (or the budget)" \
            grep -qE "policy error: .*(policy\.lua:[0-9]+|$killed)" <<<"$new_log"
    fi
    med=$(grep -E '^[0-9]+$' <<<"$lat" | median)
    printf 'figure: %-26s victim median %7d us (%s x benign), attacker answered in %7d us\n' "$name" "${med:-0}" \
        "$(awk -v a="${med:-0}" -v b="$base" 'BEGIN { printf "%.1f", a / b }')" "${attacker_us:-0}"
done
e2e_check "ran the whole corpus ($ran policies)" test "$ran" -ge 19
e2e_check "slurmctld is alive after the corpus" cluster_run_ctl scontrol ping
configure_for "$benign" && push "$benign" || true
rm -f "$benign" "$base_toml"
cluster_run_ctl scancel --quiet --user root 2>/dev/null
e2e_finish
