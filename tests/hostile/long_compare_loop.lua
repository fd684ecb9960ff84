-- attack: a loop of `<` over two 12 MiB strings: each comparison is one VM
-- instruction (a long strcoll) and the count hook looks every 1000 of them,
-- some 200-300 ms apart; only the policy worker's deadline stops it in time
-- policy: memory_limit = "64MiB"
-- policy: instruction_budget = 10000000
-- check: OK
-- test: budget
local a = string.rep("x", 12 * 1024 * 1024)
local b = a:sub(1, -2) .. "y"
function classify(job)
  if job.comment ~= "" then
    local n = 0
    while true do if a < b then n = n + 1 end end
  end
  return nil
end
