-- lanes-policy-fuzz: config=time-only seed=0x601cbc5dd0f72e19
-- found: hang: killed after 20 s, in the call after compile
local G = {}
local tl1 = select(1, (function(a2) return a2 end), 2, 3)
local _ = 17130
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local f3 = function()
    do local g4 = 0 ::L1:: g4 = g4 + 1 if g4 < 3201 then goto L1 end end
    while true do end
  end
  local _ = xpcall(f3, function(e) return xpcall(error, function() while true do end end) end)
  while true do end
  print(G)
  local v5 = math.modf((function() error('boom') end))
    return 'inference'
  end
