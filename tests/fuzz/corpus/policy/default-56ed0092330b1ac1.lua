-- lanes-policy-fuzz: config=default seed=0x56ed0092330b1ac1
-- found: classify took 124.9 ms wall, 26.7 ms CPU (preempted 7 times), bound 21.0 ms + 4.0 ms slack
local G = {}
G.ARR = {} for i = 1, 100000 do G.ARR[i] = i end
G.ARR = {} for i = 1, 100000 do G.ARR[i] = i % 2 == 0 and i or i + 0.5 end
pcall(function() return type(-7 // 2) end)
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  pcall(function() do for i = 1, 200 do local _ = table.concat(G.ARR or {}, ',') end end end)
  pcall(function() do for i = 1, 200 do local _ = select('#', table.unpack(G.ARR or {})) end end end)
  do for i = 1, 200 do local _ = tonumber((string.rep('ab', 2000000, ','))) end end
  pcall(function() do local s = (string.rep(job.name, 10000)) local u = s:sub(1, -2) .. s:sub(-1) for i = 1, 100000 do local _ = (s == u) end end end)
    return lanes.reject('0x10')
  end
