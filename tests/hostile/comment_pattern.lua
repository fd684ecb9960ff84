-- attack: a user-controlled job.comment against a pattern with three .- (cubic backtracking in C)
-- check: OK
-- test: comment_pattern.lua:6:
-- test: budget exceeded
function classify(job)
  if job.comment:find(".-.-.-x") then return "training" end
  return nil
end
