-- attack: unbounded recursion
-- check: OK
-- test: deep_recursion.lua:
local function f(n) return f(n + 1) + 1 end
function classify(job)
  if job.comment ~= "" then f(1) end
  return nil
end
