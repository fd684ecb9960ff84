-- attack: string.rep of an empty string math.maxinteger times (a C loop that allocates nothing)
-- check: OK
-- test: class:       training
function classify(job)
  local s = string.rep("", math.maxinteger)
  if job.comment ~= "" then return {class = "training", reason = "empty rep returned: " .. #s} end
  return nil
end
