-- lanes-policy-fuzz: config=default seed=0xb1a026758cca6135
-- found: state corruption: the canary job got error:/etc/slurm/lanes/fuzz.lua: no policy Lua state became free within the time budget (0 in use, 1 being rebuilt after budge, not inference
-- in-process, on a 2-core machine at load 9-10: the state rebuilt after the overrun re-runs a top level of ~60 ms CPU, which then went past its 10 x time_budget of wall time, so no state was left for the canary job; it passes on a quiet machine. Through a worker the top level gets 10 x 7/8 of the budget and the compile fails, closed.
local G = {}
G.ARR = {} for i = 1, 100000 do G.ARR[i] = i end
G.ARR = {} for i = 1, 100000 do G.ARR[i] = tostring(i) end
G.ARR = {} for i = 1, 100000 do G.ARR[i] = tostring(i) end
G.ARR = {} for i = 1, 300000 do G.ARR[i] = 300000 - i end
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local c1 = 0
  while c1 < 1432 do
    c1 = c1 + 1
    if lanes.in_window('peak') then
      do for i = 1, 200 do local t = table.pack(table.unpack(G.ARR or {}, 1, 200000)) end end
      local function mk2() local n = 0 return function(d) n = n + (d or 1) return n end end
      local ctr3 = mk2()
      for i = 1, 827 do ctr3() end
      local _ = ctr3(1 << 63)
    else
    end
    repeat local x = 1 until false
  end
    return nil
  end
