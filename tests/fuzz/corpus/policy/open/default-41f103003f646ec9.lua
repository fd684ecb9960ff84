-- lanes-policy-fuzz: config=default seed=0x41f103003f646ec9
-- found: classify took 344.9 ms wall, 72.5 ms CPU (preempted 22 times), bound 21.0 ms + 4.0 ms slack
local G = {}
local _ = 1 >> 64
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  pcall(function() for a, b in string.gmatch(job.comment, '[^%s]+') do local _ = a end end)
  local c1 = 0
  while c1 < 907 do
    c1 = c1 + 1
    for i2 = -1, math.maxinteger do
      pcall(function() do local s = (string.rep('\xe4\xbd\xa0', 1000000)) local u = s:sub(1, -2) .. s:sub(-1) for i = 1, 100000 do local _ = (s == u) end end end)
      while true do end
      for k, v in pairs(job) do end
    end
  end
  pcall(function()
    G.ARR = {} for i = 1, 50000 do G.ARR[i] = string.rep('a', 64) .. i end
  end)
  local r3; local function r3b(n) return r3(n) end r3 = function(n) if n == 0 then return 0 end return r3b(n - 1) end
  pcall(r3, 116472)
  local _ = string.find(select(4, select(-3, job, 2, 3), 2, 3), (- (function() error('boom') end)), 3 // 0.0, true)
    return {class = 'training', partition = 'gpu', time_limit = 63719}
  end
