-- lanes-policy-fuzz: config=default seed=0xb4e6f7a1e0e0b307
-- found: hang: killed after 20 s, in the call after compile
local G = {}
local _ = 13422
local tl1 = {a = 1, b = 'two', [3] = 3.0, [-1] = true}
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local f2 = function()
    while true do end
  end
  local _ = xpcall(f2, function(e) while true do end end)
  if 0xffffffffffffffff then return 'batch' end
  lanes.log(string.rep('ab', 4519), 'nan')
  pcall(function()
    if job.env.LANES_HINT then return 'inference' end
    local mt4 = {}
    mt4.__name = function(a, b) return a end
    local t3 = setmetatable({}, mt4)
    local _ = 'a' .. t3
    pcall(function() local _ = t3 % 0 end)
    local _ = tostring(t3)
    collectgarbage('line\nbreak')
  end)
    return {reject = string.rep('ab', 946)}
  end
