-- SPDX-License-Identifier: GPL-2.0-or-later
-- by_partition.lua: classify by the partition a job asks for (see lanes-policy(7)).
--
-- For sites whose partitions already say what a job is: "infer" nodes serve
-- models, "train" nodes train them. The table below maps each partition to a
-- class; a job listing several partitions ("train,infer") gets the class of
-- the first one that is mapped. Unmapped partitions fall through to the
-- [[rules]] of lanes.toml, then to default_class.

local CLASS_OF_PARTITION = {
    infer = "inference",
    train = "training",
    transfer = "scavenger",
}

-- Check the table against lanes.toml once, when the script is loaded: a typo
-- in a class name fails the reload (the last good policy stays) instead of
-- failing jobs later.
for partition, class in pairs(CLASS_OF_PARTITION) do
    assert(lanes.classes[class], "partition " .. partition .. " maps to unknown class " .. class)
end

function classify(job)
    -- An explicit --lanes-class (already checked against the class's
    -- allowed_users/allowed_accounts) wins.
    if job.lanes_class then
        return {class = job.lanes_class, reason = "requested with --lanes-class"}
    end
    for partition in job.partition:gmatch("[^,]+") do
        local class = CLASS_OF_PARTITION[partition]
        if class then
            return {class = class, reason = "partition " .. partition}
        end
    end
    return nil
end
