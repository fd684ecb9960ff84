#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 64 parallel submitters on a real cluster (#20 item 7): SUBMITTERS concurrent
# sbatch clients of one user, each submitting JOBS_EACH held jobs one after the
# other, against slurmctld with no job_submit plugin ("none"), with
# job_submit/lanes and its policy workers at their defaults ("lanes"), and with
# one worker and policy.queue = 0 ("smallq"), where every 16th job makes the
# policy run until its worker is killed at the deadline, so the jobs that come
# while it is replaced find no worker and no queue place. Interleaved runs.
#
#   bash bench/parallel_submit_bench.sh [SUBMITTERS=64] [JOBS_EACH=4]
#   PARALLEL_BENCH_VARIANTS="none lanes smallq ..." to choose the runs.
# Needs root and a built tree (LANES_BUILDDIR, default ./build).
#
# Prints per run and as medians: slurmctld's server time per submit (sdiag
# REQUEST_SUBMIT_BATCH_JOB ave_time), the client-side wall time per job (the
# whole burst's wall time / jobs) and each sbatch's latency (p50, p99); the
# ratios to "none". And checks, for every job: the class it got (read back from
# squeue: partition and nice, which differ per class here) is the one the
# policy gives it (its number mod 3); every refused ordinary job was told the
# queue was full or no worker was free; every "slow-" job was refused naming
# the time budget; the refusals sbatch saw equal lanes_policy_refused_total in
# policy.metrics_file. Exits 1 if a check failed.
# shellcheck source=bench/e2e_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_bench.sh"
submitters=${1:-64}
jobs_each=${2:-4}
user=$(cluster_test_user) || exit 1
T=$(mktemp -d -t lparbench.XXXXXX)
now_us() { local t=${EPOCHREALTIME/[.,]/}; printf '%s\n' "$((10#$t))"; }

# The policy: job "j-N" gets classes[N mod 3]; "slow-N" (smallq only) compares
# two 4 MiB strings until the worker's deadline (as
# tests/hostile/long_compare_loop.lua: the Lua hook does not see it in time).
write_policy() {  # DIR SLOW(0|1)
    {
        echo 'local classes = {"training", "plain", "inference"}'
        if (($2)); then
            echo 'local a = string.rep("x", 4 * 1024 * 1024)'
            echo 'local b = a:sub(1, -2) .. "y"'
        fi
        echo 'function classify(job)'
        if (($2)); then
            echo '  if job.name:match("^slow%-") then'
            echo '    local n = 0'
            echo '    while true do if a < b then n = n + 1 end end'
            echo '  end'
        fi
        echo '  local n = tonumber(job.name:match("^j%-(%d+)$"))'
        echo '  if n == nil then return nil end'
        echo '  return classes[n % 3 + 1]'
        echo 'end'
    } >"$1/policy.lua"
}
expected_class() { local c=(training plain inference); echo "${c[$(($1 % 3))]}"; }

# submitter S: JOBS_EACH held jobs; one line per job: NAME RC MICROSECONDS OUTPUT
submitter() {
    local s=$1 slow=$2 k n name t0 out rc
    for ((k = 0; k < jobs_each; k++)); do
        n=$((s * jobs_each + k))
        name=j-$n
        ((slow && n % 16 == 15)) && name=slow-$n
        t0=$(now_us)
        out=$(cluster_run_as "$user" timeout 60 sbatch --parsable -H -J "$name" -o /dev/null --wrap true 2>&1)
        rc=$?
        printf '%s %s %s %s\n' "$name" "$rc" "$(($(now_us) - t0))" "$(tr '\n' ' ' <<<"$out")"
    done
}

# check DESCRIPTION CMD...: a failed check is printed and fails the bench (runs
# happen in subshells: the verdict is a file).
check() {
    local what=$1
    shift
    if "$@"; then return 0; fi
    echo "CHECK FAILED: $what" >&2
    touch "$T/failed"
}

run_variant() {  # NAME -> "NAME server_us wall_us_per_job p50_us p99_us accepted refused"
    local name=$1 slow=0 s t0 t1 ave
    [[ $name == smallq ]] && slow=1
    E2E_JOB_SUBMIT_PLUGINS=lanes
    [[ $name == none ]] && E2E_JOB_SUBMIT_PLUGINS=""
    e2e_pre_start() {
        [[ -z $E2E_JOB_SUBMIT_PLUGINS ]] && sed -i '/^JobSubmitPlugins=/d' "$1/slurm.conf"
        write_policy "$1" "$slow"
        # Classes told apart in squeue: training nice 10, plain nice 20 (both
        # partition training), inference partition inference.
        sed -i -e '/^\[classes.training\]$/a nice = 10' -e '/^\[classes.plain\]$/a nice = 20' \
            -e "s|^on_error = \"reject\"\$|on_error = \"reject\"\nmetrics_file = \"$1/controller.prom\"|" \
            "$1/lanes.toml"
        if ((slow)); then
            sed -i 's|^on_error = "reject"$|on_error = "reject"\nworkers = 1\nqueue = 0\noverrun_cooldown = "0s"\ntime_budget = \"100ms\"\nmemory_limit = "64MiB"\ninstruction_budget = 10000000|' \
                "$1/lanes.toml"
        fi
    }
    E2E_MODE=offpeak e2e_start_cluster >/dev/null 2>&1 || { echo "cluster for $name failed" >&2; return 1; }
    # Warm up (plugin, workers, user-name cache), then reset the counters.
    for s in 1 2 3 4 5; do cluster_run_as "$user" sbatch -H -J "warm-$s" -o /dev/null --wrap true >/dev/null 2>&1; done
    cluster_run_ctl sdiag -r >/dev/null
    local out=$T/$name.$RANDOM pids=()
    mkdir -p "$out"
    t0=$(now_us)
    for ((s = 0; s < submitters; s++)); do
        submitter "$s" "$slow" >"$out/$s" &
        pids+=($!)
    done
    wait "${pids[@]}"
    t1=$(now_us)
    ave=$(cluster_run_ctl sdiag | awk '/REQUEST_SUBMIT_BATCH_JOB/ { for (i = 1; i <= NF; i++) if ($i ~ /^ave_time:/) { sub("ave_time:", "", $i); print $i } }')
    cat "$out"/* >"$out/all"
    local total accepted refused
    total=$(wc -l <"$out/all")
    accepted=$(awk '$2 == 0' "$out/all" | wc -l)
    refused=$((total - accepted))
    check "$name: every one of the $((submitters * jobs_each)) submissions was answered ($total lines)" \
        test "$total" -eq $((submitters * jobs_each))
    check "$name: no sbatch hung" test "$(awk '$2 == 124' "$out/all" | wc -l)" -eq 0
    if [[ $name != none ]]; then
        # What each accepted job got, read back from slurmctld.
        local got wrong=0 line jname jpart jnice class want
        got=$(cluster_run_ctl squeue -h -u "$user" -o '%j %P %y')
        while read -r jname jpart jnice; do
            [[ $jname == j-* ]] || continue
            case $jpart/$jnice in
                inference/0) class=inference ;; training/10) class=training ;; training/20) class=plain ;;
                *) class="unknown($jpart/$jnice)" ;;
            esac
            want=$(expected_class "${jname#j-}")
            [[ $class == "$want" ]] || { wrong=$((wrong + 1)); echo "$name: $jname got $class, the policy gives $want" >&2; }
        done <<<"$got"
        check "$name: every accepted job has the class its policy gives it ($wrong wrong)" test "$wrong" -eq 0
        check "$name: every accepted ordinary job is in the queue" \
            test "$(grep -c '^j-' <<<"$got")" -eq "$(awk '$2 == 0 && $1 ~ /^j-/' "$out/all" | wc -l)"
        check "$name: every slow job was refused naming the time budget (or the queue)" \
            test "$(awk '$1 ~ /^slow-/ && !($2 != 0 && /within the time budget|the policy queue is full|no policy worker became free/)' "$out/all" | wc -l)" -eq 0
        # An ordinary job may be refused because the queue was full, no worker
        # was free, or (on an overloaded machine) its worker did not answer
        # within the budget: each says so. Nothing else.
        local why_q why_free why_budget other known='the policy queue is full|no policy worker became free|within the time budget'
        why_q=$(awk '$1 ~ /^j-/ && $2 != 0 && /the policy queue is full/' "$out/all" | wc -l)
        why_free=$(awk '$1 ~ /^j-/ && $2 != 0 && /no policy worker became free/' "$out/all" | wc -l)
        why_budget=$(awk '$1 ~ /^j-/ && $2 != 0 && /within the time budget/' "$out/all" | wc -l)
        other=$(awk -v k="$known" '$1 ~ /^j-/ && $2 != 0 && $0 !~ k' "$out/all" | wc -l)
        check "$name: no ordinary job refused without saying why ($other)" test "$other" -eq 0
        awk -v k="$known" '$1 ~ /^j-/ && $2 != 0 && $0 !~ k' "$out/all" | head -3 >&2
        # The refusals are counted in policy.metrics_file (written every 10 s).
        local prom=$CLUSTER_CONF_DIR/controller.prom
        local all_q all_free
        all_q=$(awk '$2 != 0 && /the policy queue is full/' "$out/all" | wc -l)
        all_free=$(awk '$2 != 0 && /no policy worker became free/' "$out/all" | wc -l)
        metric() { sed -n "s/^lanes_policy_refused_total{reason=\"$1\"} //p" "$prom" 2>/dev/null; }
        counted() { [[ $(metric queue_full) == "$all_q" && $(metric no_worker_free) == "$all_free" ]]; }
        e2e_wait_until 25 counted
        check "$name: refusals in metrics_file (queue_full $(metric queue_full), no_worker_free $(metric no_worker_free)) = what sbatch said ($all_q, $all_free)" counted
        echo "$name: ordinary jobs refused: queue full $why_q, no worker free $why_free, over the budget $why_budget; slow jobs $(awk '$1 ~ /^slow-/' "$out/all" | wc -l); metric queue_full $(metric queue_full)" >&2
    fi
    cluster_stop >/dev/null 2>&1
    local lat
    lat=$(awk '$2 == 0 && $1 ~ /^j-/ { print $3 }' "$out/all" | sort -n | paste -sd,)
    python3 - "$name" "${ave:-nan}" "$(((t1 - t0) / total))" "$lat" "$accepted" "$refused" <<'PY'
import sys
name, ave, wall, lat, acc, ref = sys.argv[1:]
v = sorted(int(x) for x in lat.split(",") if x)
pct = lambda p: v[min(len(v) - 1, int(p * len(v)))] if v else 0
print(name, ave, wall, pct(0.5), pct(0.99), acc, ref)
PY
}

echo "# $submitters parallel submitters x $jobs_each held jobs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
results=$(for v in ${PARALLEL_BENCH_VARIANTS:-none lanes smallq none lanes smallq none lanes smallq}; do run_variant "$v"; done)
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
bench_failed=0
[[ -e $T/failed ]] && bench_failed=1
rm -rf "$T"
printf '%s\n' "$results"
python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in sys.argv[1].splitlines():
    f = line.split()
    if len(f) == 7:
        runs.setdefault(f[0], []).append([float(x) for x in f[1:]])
med = {n: [statistics.median(r[i] for r in v) for i in range(6)] for n, v in runs.items()}
print(f"{'variant':<8} {'runs':>4} {'server µs/submit':>16} {'wall µs/job':>11} {'sbatch p50 µs':>13} {'sbatch p99 µs':>13} {'accepted':>8} {'refused':>7}")
for n, m in med.items():
    print(f"{n:<8} {len(runs[n]):>4} {m[0]:>16.0f} {m[1]:>11.0f} {m[2]:>13.0f} {m[3]:>13.0f} {m[4]:>8.0f} {m[5]:>7.0f}")
if "none" in med:
    for n in med:
        if n != "none":
            b = med["none"]
            print(f"ratio {n}/none: server {med[n][0]/b[0]:.2f}  wall/job {med[n][1]/b[1]:.2f}  p50 {med[n][2]/b[2]:.2f}  p99 {med[n][3]/b[3]:.2f}")
PY
exit "$bench_failed"
