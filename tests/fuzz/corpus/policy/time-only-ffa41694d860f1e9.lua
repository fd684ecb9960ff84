-- lanes-policy-fuzz: config=time-only seed=0xffa41694d860f1e9
-- found: hang: killed after 20 s, in the call after compile
local G = {}
pcall(function() return string.byte((not -math.huge), G, rawlen('10GB')) end)
G.CLASS = '10GB'
local _ = 2
pcall(function() return utf8.offset(math.pi, job.account) end)
pcall(function() return lanes.next_end('\0nul') end)
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  for k, v in pairs(job.env) do local _ = k .. '=' .. v end
  local f1 = function()
    while true do end
  end
  local _ = xpcall(f1, function(e) while true do end end)
  pcall(function() return table.pack(job.tres_per_job, -1/0) end)
  do
    local cl2 <close> = setmetatable({}, {__close = function(o, e) local _ = e end})
  end
  pcall(function() return ({class = string.rep('ab', 542), reason = [=[LLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLL]=]}):upper() end)
  for k, v in pairs(job.env) do local _ = k .. '=' .. v end
    return lanes.rules(job)
  end
