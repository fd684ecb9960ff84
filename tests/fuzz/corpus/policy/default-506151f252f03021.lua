-- lanes-policy-fuzz: config=default seed=0x506151f252f03021
-- found: hang: killed after 20 s, in the call after compile
local G = {}
local function helper1(job) return function() end end
G.CLASS = 'no-such-class'
pcall(function() return string.char(112, lanes.rules(job)) end)
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local f2 = function()
    local _ = load('10GB', 'chunk', 't', {})
    do local s = (string.rep(job.name, 10000)) for i = 1, 200 do local _ = s:byte(1, 100000) end end
    while true do end
  end
  local _ = xpcall(f2, function(e) local function f() return f() end return f() end)
  for i3 = -1, math.maxinteger do
    do local a, b = (string.rep('a', 4000000)) .. 'a', (string.rep('a', 4000000)) .. 'b' for i = 1, 100000 do local _ = a < b end end
  end
  for i, v in ipairs(G) do if i > 100 then break end end
  print(job.no_such_field)
    return '\27[2J' .. job.name
  end
