-- lanes-policy-fuzz: config=default seed=0xec68f9a2d2012923
-- found: hang: killed after 20 s, in the call after compile
local G = {}
pcall(function() return lanes.default_class end)
G.CLASS = [=[LLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLL]=]
G.CLASS = '(a)(b)'
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local f1 = function()
    job.tres_per_node = math.fmod(string.rep('ab', 1130), [=[LLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLL]=])
    local function mk2() local n = 0 return function(d) n = n + (d or 1) return n end end
    local ctr3 = mk2()
    for i = 1, 539 do ctr3() end
    local _ = ctr3(41067)
  end
  local _ = xpcall(f1, function(e) local n = 0 while true do n = n + 1 end end)
    return nil
  end
