-- lanes-policy-fuzz: config=time-only seed=0xd6491baf5de10f94
-- found: hang: killed after 20 s, in the call after compile
local G = {}
pcall(function() return string.upper(lanes.rules(job)) end)
pcall(function() return utf8.char(G[ nil ], 72, 0x10FFFF) end)
G.S = string.rep('a', 4000000)
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local f1 = function()
    while true do end
  end
  local _ = xpcall(f1, function(e) local n = 0 while true do n = n + 1 end end)
  local _ = (select(3, {a = 1, b = 'two', [3] = 3.0, [-1] = true}, 2, 3)) .. ('inference')
  print(' 12 ')
  local v2 = job
    return 'inference'
  end
