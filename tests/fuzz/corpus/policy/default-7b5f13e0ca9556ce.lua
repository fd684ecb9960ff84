-- lanes-policy-fuzz: config=default seed=0x7b5f13e0ca9556ce
-- found: hang: killed after 20 s, in the call after compile
local G = {}
G.S = string.rep('a', 1000000)
G.CLASS = ' 12 '
local tl1 = (function() error('boom') end)
pcall(function() return lanes.parse_duration(G) end)
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local c3 = 0
  while c3 < 352 do
    c3 = c3 + 1
  end
  local f4 = function()
    pcall(function() do local s = (string.rep('(', 50000) .. string.rep(')', 50000)) for i = 1, 200 do local _ = tostring(s):lower() end end end)
    while true do end
  end
  local _ = xpcall(f4, function(e) return xpcall(error, function() while true do end end) end)
  local v5 = (function(...) return select('#', ...) end)
  for i, v in ipairs(G) do if i > 100 then break end end
  local v7 = getmetatable(job[ tostring('\u{10FFFF}') ])
    return {class = G, message = (function(a8) return a8 end)}
  end
