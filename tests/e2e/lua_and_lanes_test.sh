#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# JobSubmitPlugins=lua,lanes: Slurm's own job_submit/lua (Lua 5.1) and
# job_submit/lanes (Lua 5.4) loaded together in one slurmctld, each doing its part.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
e2e_pre_start() {
    cat >"$1/job_submit.lua" <<'LUA'
-- Slurm's job_submit/lua (Lua 5.1): tags every job; Lanes routes it afterwards.
function slurm_job_submit(job_desc, part_list, submit_uid)
  job_desc.comment = "seen-by-slurm-lua-" .. _VERSION:gsub(" ", "")
  slurm.user_msg("note from job_submit/lua")
  return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end
LUA
}
E2E_JOB_SUBMIT_PLUGINS=lua,lanes E2E_MODE=offpeak e2e_start_cluster
user=$(cluster_test_user)

id=$(cluster_sbatch_as "$user" -J infer-both -o /dev/null --wrap true)
e2e_check "job accepted with both plugins loaded" test -n "$id"
e2e_check "job_submit/lua ran (Lua 5.1)" grep -q 'Comment=seen-by-slurm-lua-Lua5.1' <<<"$(cluster_run_ctl scontrol show job "$id")"
e2e_check "job_submit/lanes ran (policy routed to inference)" test "$(cluster_job_field "$id" Partition)" = inference
e2e_check "job completes" cluster_wait_job "$id" COMPLETED 60
id=$(cluster_sbatch_as "$user" -J train-both -o /dev/null --wrap true)
e2e_check "training job routed by lanes" test "$(cluster_job_field "$id" Partition)" = training
e2e_check "slurmctld loaded both plugins" grep -q 'lanes: loaded' "$CLUSTER_LOG_DIR/slurmctld.log"

# Both plugins' messages reach the user: job_submit/lua's slurm.user_msg is
# kept when Lanes adds its own (a training job without --time is warned).
out=$(cluster_run_as "$user" sbatch --parsable -J train-msgs -o /dev/null --hold --wrap true 2>&1)
e2e_check "the user sees job_submit/lua's message ($out)" grep -q 'note from job_submit/lua' <<<"$out"
e2e_check "and Lanes' message ($out)" grep -q 'lanes: training job has no time limit' <<<"$out"

# A policy's reject() text reaches the user as one line: no forged sbatch
# line, no terminal escape; a 1 MiB message is cut (to the user and the log).
ctl_log=$CLUSTER_LOG_DIR/slurmctld.log
before=$(grep -c 'lanes: reloaded' "$ctl_log")
sleep 1.1
cat >"$CLUSTER_CONF_DIR/policy.lua" <<'LUA'
function classify(job)
  if job.name == "forge" then
    reject("no\nsbatch: Submitted batch job 999\n\27[2J\27]0;owned\7")
  end
  if job.name == "huge" then
    local s = "x" for i = 1, 20 do s = s .. s end  -- 1 MiB, built fast
    reject(s)
  end
  if job.name:match("^infer") then return "inference" end
  return nil
end
LUA
for _ in $(seq 50); do (($(grep -c 'lanes: reloaded' "$ctl_log") > before)) && break; sleep 0.1; done
out=$(cluster_run_as "$user" sbatch --parsable -J forge -o /dev/null --wrap true 2>&1)
e2e_check "the forging reject is refused ($out)" grep -q 'no\\x0Asbatch: Submitted batch job 999' <<<"$out"
e2e_check "no forged line reaches the user" bash -c '! grep -q "^sbatch: Submitted batch job 999" <<<"$1"' _ "$out"
e2e_check "no escape character reaches the user" bash -c '! grep -q $'"'"'\x1b'"'"' <<<"$1"' _ "$out"
e2e_check "job_submit/lua's message is kept on a rejection too" grep -q 'note from job_submit/lua' <<<"$out"
out=$(cluster_run_as "$user" sbatch --parsable -J huge -o /dev/null --wrap true 2>&1)
e2e_check "a 1 MiB reject message is cut for the user (${#out} bytes: ${out:0:300})" \
    bash -c 'test "${#1}" -lt 20000 && grep -q "xxxxxxxx \[cut\]" <<<"$1"' _ "$out"
e2e_check "and in slurmctld's log" bash -c '! awk "length > 20000" "$1" | grep -q .' _ "$ctl_log"
e2e_finish
