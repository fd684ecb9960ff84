-- lanes-policy-fuzz: config=tight seed=0x89d56fd66339961a
-- found: hang: killed after 20 s, in the call after compile
local G = {}
local function helper1(job) return 'batch' end
local function helper2(job) return {reject = '\0nul'} end
local tl3 = lanes.windows
G.CLASS = '10GB'
pcall(function() return lanes.classes.training end)
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  pcall(string.gsub, select(4, 'line\nbreak', 2, 3), '[a', string.upper)
  local f4 = function()
    local _ = {}
    local f5 = function()
      while true do end
    end
    local _ = xpcall(f5, function(e) for i = 1, math.maxinteger do end end)
    error(job, 2)
    while true do end
  end
  local _ = xpcall(f4, function(e) local function f(n) return 1 + f(n + 1) end return f(1) end)
    return 'training'
  end
