-- lanes-policy-fuzz: config=time-only seed=0xf93383c7a8cc0229
-- found: state corruption: the canary job got error:/etc/slurm/lanes/fuzz.lua: no policy Lua state became free within the time budget (0 in use, 1 being rebuilt after budge, not inference
-- in-process, on a 2-core machine at load 9-10: the state rebuilt after the overrun re-runs a top level of ~60 ms CPU, which then went past its 10 x time_budget of wall time, so no state was left for the canary job; it passes on a quiet machine. Through a worker the top level gets 10 x 7/8 of the budget and the compile fails, closed.
local G = {}
local tl1 = select(2, pcall(function() return {} end))
local function helper2(job) return lanes.reject(string.rep('ab', 3368)) end
G.ARR = {} for i = 1, 50000 do G.ARR[i] = string.rep('a', 64) .. i end
G.ARR = {} for i = 1, 100000 do G.ARR[i] = tostring(i) end
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local _ = #tl1
  pcall(function() do local s = (string.rep('x', 6000000)) for i = 1, 200 do local _ = s .. 'x' end end end)
    return {unknown_field = 1}
  end
