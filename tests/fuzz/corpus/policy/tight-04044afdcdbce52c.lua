-- lanes-policy-fuzz: config=tight seed=0x04044afdcdbce52c
-- found: hang: killed after 20 s, in the call after compile
local G = {}
pcall(function() return lanes.next_end(0x7fffffffffffffff) end)
G.CLASS = 'line\nbreak'
G.CLASS = '\xff\xfe'
local function helper1(job) return lanes.reject('%d %s %q') end
pcall(function() return next((function() error('boom') end)) end)
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  for i, v in ipairs(G) do if i > 100 then break end end
  local v3 = job
  local f4 = function()
    do
      local cl5 <close> = setmetatable({}, {__close = function(o, e) error('in close') end})
    end
    while true do end
  end
  local _ = xpcall(f4, function(e) local function f() return f() end return f() end)
    return -1
  end
