#!/usr/bin/env bash
# JobSubmitPlugins=lua,lanes: Slurm's own job_submit/lua (Lua 5.1) and
# job_submit/lanes (Lua 5.4) loaded together in one slurmctld, each doing its part.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
e2e_pre_start() {
    cat >"$1/job_submit.lua" <<'LUA'
-- Slurm's job_submit/lua (Lua 5.1): tags every job; Lanes routes it afterwards.
function slurm_job_submit(job_desc, part_list, submit_uid)
  job_desc.comment = "seen-by-slurm-lua-" .. _VERSION:gsub(" ", "")
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
e2e_finish
