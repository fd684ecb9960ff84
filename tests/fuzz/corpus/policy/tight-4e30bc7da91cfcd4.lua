-- lanes-policy-fuzz: config=tight seed=0x4e30bc7da91cfcd4
-- found: hang: killed after 20 s, in the call after compile
local G = {}
local function helper1(job) return setmetatable({}, {__index = function() while true do end end}) end
local _ = 1
local tl2 = (not {class = string.rep('ab', 3530), reason = 'no-such-class'})
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local f3 = function()
    job.min_nodes = string.unpack(job.no_such_field, '')
    pcall(string.find, (nil | job.max_nodes), '%')
    tl2 = string.find('\0nul', (function() error('boom') end), {1, 2, 3, 'x', nil, 5}, true)
  end
  local _ = xpcall(f3, function(e) return xpcall(error, function() while true do end end) end)
  local _ = load(string.rep('ab', 2165), 'chunk', 't', {})
  if tostring(select(3, [[long
string]], 2, 3)) then return {unknown_field = 1} end
  local v5 = [[long
string]]
  pcall(function()
    pcall(function() do local s = (job.comment) for i = 1, 200 do local _ = string.format('%q', s) end end end)
  end)
  do local s = (job.comment) for i = 1, 200 do local _ = s .. 'x' end end
    return {class = 'batch', nice = 83222, begin_time = 38227}
  end
