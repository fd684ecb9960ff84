-- SPDX-License-Identifier: GPL-2.0-or-later
-- default.lua: the example Lanes policy (see lanes-policy(7)).
--
-- Lanes calls classify(job) for every submitted job, inside slurmctld, under a
-- small budget (policy.instruction_budget, policy.time_budget, policy.memory_limit
-- in lanes.toml). It returns one of:
--
--   "training"                      a class name (a [classes.NAME] of lanes.toml)
--   {class = "training", ...}       a class plus a reason, messages and routing
--                                   overrides (only fields listed in the class's
--                                   policy_overrides are accepted)
--   nil                             no opinion: the [[rules]] and default_class decide
--
-- reject("why") refuses the job and shows "why" to the user.
--
-- Lanes then routes the job from its class: partition, QOS, features, nice, and
-- time windows (a training job submitted during "peak" starts when peak ends).
-- The policy only has to say WHAT the job is; lanes.toml says what that means.
--
-- Do not keep state between calls: several copies of this script run side by
-- side (one per concurrent submission) and each may be rebuilt at any time.

-- Jobs larger than this are not submitted directly: they go through the
-- allocation committee and get a reservation.
local MAX_GPUS_PER_JOB = 256

-- Training jobs without --time get this limit, so Lanes can schedule them
-- around the peak window (the training class lists "time_limit" in its
-- policy_overrides).
local DEFAULT_TRAINING_MINUTES = 4 * 60

-- Job names that mark inference servers and data movers.
local function is_serving(name)
    return name:match("^serve%-") ~= nil or name:match("^infer%-") ~= nil
end

local function is_data_mover(name)
    return name:match("^rsync%-") ~= nil or name:match("^backup%-") ~= nil
end

-- The class for a training job, with a default time limit when none was given.
local function training(job, class)
    if job.time_limit == nil and lanes.classes[class] then
        -- lanes.classes[...].policy_overrides tells whether we may set it.
        for _, field in ipairs(lanes.classes[class].policy_overrides) do
            if field == "time_limit" then
                return {
                    class = class,
                    reason = "training without --time: " .. DEFAULT_TRAINING_MINUTES .. " min default",
                    time_limit = DEFAULT_TRAINING_MINUTES,
                    message = "lanes: no --time given; training jobs get " ..
                              DEFAULT_TRAINING_MINUTES // 60 .. " hours",
                }
            end
        end
    end
    return {class = class, reason = "training"}
end

function classify(job)
    -- 1. Refuse what must never be submitted directly.
    if job.gpus > MAX_GPUS_PER_JOB then
        reject(string.format("%d GPUs is above the per-job limit of %d; ask the allocation committee " ..
                             "for a reservation", job.gpus, MAX_GPUS_PER_JOB))
    end

    -- 2. An explicit --lanes-class request has already been checked against the
    --    class's allowed_users/allowed_accounts: honour it.
    if job.lanes_class then
        if lanes.classes[job.lanes_class] and #lanes.classes[job.lanes_class].avoid_windows > 0 then
            return training(job, job.lanes_class)
        end
        return {class = job.lanes_class, reason = "requested with --lanes-class"}
    end

    -- 3. Inference servers: by name, or anything in an inference partition.
    if is_serving(job.name) then
        return {class = "inference", reason = "serving job name"}
    end

    -- 4. Data movement is scavenger traffic.
    if is_data_mover(job.name) then
        return {class = "scavenger", reason = "data movement job name"}
    end

    -- 5. Big GPU batch jobs are training; interactive sessions (srun/salloc
    --    without a batch script) never are.
    if job.batch and (job.gpus >= 8 or (job.gpus > 0 and job.max_nodes > 1)) then
        return training(job, "training")
    end

    -- 6. Everything else: let the [[rules]] of lanes.toml decide (they end in
    --    default_class). lanes.rules(job) would tell us what they say.
    return nil
end
