-- attack: string.rep with a separator, result far beyond the memory limit
-- check: OK
-- test: memory limit
function classify(job)
  if job.comment ~= "" then local s = string.rep("x", math.maxinteger, "yy") end
  return nil
end
