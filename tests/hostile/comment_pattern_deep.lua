-- attack: five .- captures (O(n^6) on a long comment: effectively forever in stock Lua)
-- check: OK
-- test: comment_pattern_deep.lua:6:
-- test: budget exceeded
function classify(job)
  local a = job.comment:match("(.-)(.-)(.-)(.-)(.-)x")
  return a and "training" or nil
end
