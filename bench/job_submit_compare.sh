#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Side by side on a real cluster, in one run: the cost of job_submit/lanes vs
# Slurm's own job_submit/lua running an equivalent policy, vs no plugin.
# Measures slurmctld's server-side time per submit (sdiag: REQUEST_SUBMIT_BATCH_JOB
# ave_time) and the client-side submit throughput, and prints the ratios.
#
#   bash bench/job_submit_compare.sh [JOBS=300]
# Needs root and a built tree (LANES_BUILDDIR, default ./build).
# shellcheck source=bench/e2e_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_bench.sh"
jobs=${1:-300}

# job_submit/lua doing what the e2e policy + lanes.toml do: inference by name to
# the inference partition, training to training and deferred out of the peak
# window, the decision recorded for the nodes.
write_lua_policy() {
    local start=$1 end=$2
    cat >"$3/job_submit.lua" <<LUA
local function minutes(hhmm)
  local h, m = string.match(hhmm, "(%d+):(%d+)")
  return tonumber(h) * 60 + tonumber(m)
end
local peak_start, peak_end = minutes("$start"), minutes("$end")
function slurm_job_submit(job_desc, part_list, submit_uid)
  local name = job_desc.name or ""
  if string.match(name, "^infer") then
    job_desc.partition = "inference"
    job_desc.comment = "class=inference dscp=34"
    return slurm.SUCCESS
  end
  job_desc.partition = "training"
  job_desc.comment = "class=training dscp=8 rate=40000000"
  local t = os.date("!*t")
  local now = t.hour * 60 + t.min
  local inside
  if peak_start < peak_end then inside = now >= peak_start and now < peak_end
  else inside = now >= peak_start or now < peak_end end
  if inside and submit_uid ~= 0 then
    local wait = (peak_end - now) % 1440
    job_desc.begin_time = os.time() + wait * 60 - t.sec
    slurm.log_user("lua: training job deferred (peak window)")
  end
  return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end
LUA
}

run_variant() {  # NAME PLUGINS -> prints "NAME ave_us submits_per_s"
    local name=$1 plugins=$2 conf t0 t1 i
    E2E_JOB_SUBMIT_PLUGINS=$plugins
    e2e_pre_start() {
        write_lua_policy "$(e2e_hhmm 120)" "$(e2e_hhmm 180)" "$1"
        if [[ -z $E2E_JOB_SUBMIT_PLUGINS ]]; then sed -i '/^JobSubmitPlugins=/d' "$1/slurm.conf"; fi
    }
    E2E_MODE=offpeak e2e_start_cluster >/dev/null 2>&1 || { echo "cluster for $name failed" >&2; return 1; }
    # Warm up (plugin load, policy compile, user-name cache), then reset counters.
    for i in 1 2 3 4 5; do cluster_run_ctl sbatch --hold -J "train-w$i" -o /dev/null --wrap true >/dev/null; done
    cluster_run_ctl sdiag -r >/dev/null
    t0=$(date +%s.%N)
    for ((i = 0; i < jobs; i++)); do
        if ((i % 2)); then conf=infer; else conf=train; fi
        cluster_run_ctl sbatch --hold -J "$conf-$i" -o /dev/null --wrap true >/dev/null || echo "submit $i failed" >&2
    done
    t1=$(date +%s.%N)
    local ave
    ave=$(cluster_run_ctl sdiag | awk '/REQUEST_SUBMIT_BATCH_JOB/ { for (i = 1; i <= NF; i++) if ($i ~ /^ave_time:/) { sub("ave_time:", "", $i); print $i } }')
    cluster_stop >/dev/null 2>&1
    python3 -c "print('$name', '${ave:-nan}', round($jobs / ($t1 - $t0), 1))"
}

echo "# $jobs batch submissions per variant, server-side time from sdiag (µs), throughput from the client"
# Interleaved repetitions: the server-side time is dominated by writing each job
# to StateSaveLocation and by whatever else the machine does, so medians of
# interleaved runs are compared.
variants=${JOB_SUBMIT_VARIANTS:-"none lua lanes none lua lanes none lua lanes"}
results=$(
    for v in $variants; do
        case $v in none) run_variant none "" ;; *) run_variant "$v" "$v" ;; esac
    done
)
printf '%s\n' "$results"
python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in sys.argv[1].splitlines():
    if line.strip():
        name, server_us, rate = line.split()
        runs.setdefault(name, []).append((float(server_us), float(rate)))
med = {n: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for n, v in runs.items()}
print(f"{'variant':<8} {'runs':>4} {'server µs/submit (median)':>26} {'submits/s (median)':>19}")
for name, (us, rate) in med.items():
    print(f"{name:<8} {len(runs[name]):>4} {us:>26.0f} {rate:>19.1f}")
if {"none", "lua", "lanes"} <= med.keys():
    none, lua, lanes = med["none"], med["lua"], med["lanes"]
    print(f"ratio server time lanes/lua: {lanes[0]/lua[0]:.2f}   lanes/none: {lanes[0]/none[0]:.2f}   lua/none: {lua[0]/none[0]:.2f}")
    print(f"ratio throughput  lanes/lua: {lanes[1]/lua[1]:.2f}   lanes/none: {lanes[1]/none[1]:.2f}")
PY
