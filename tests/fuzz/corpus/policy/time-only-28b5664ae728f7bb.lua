-- lanes-policy-fuzz: config=time-only seed=0x28b5664ae728f7bb
-- found: classify took 480.8 ms wall, 94.6 ms CPU (preempted 55 times), bound 21.0 ms + 4.0 ms slack
local G = {}
G.CLASS = 'nan'
G.ARR = {} for i = 1, 300000 do G.ARR[i] = 300000 - i end
pcall(function() return string.format('%d %s %q', lanes.parse_rate(false), (# false)) end)
G.S = string.rep('a', 4000000)
local _ = 2^63
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  pcall(function() return lanes.now() end)
  do for i = 1, 200 do table.sort(G.ARR or {}) end end
  if lanes.log(1e308, 'info') then return '\27[2J' .. job.name end
    return {reject = '%d %s %q'}
  end
