-- lanes-policy-fuzz: config=time-only seed=0x9a5e88592fde9423
-- found: classify took 84.2 ms wall, 25.5 ms CPU (preempted 8 times), bound 21.0 ms + 4.0 ms slack
local G = {}
local _ = -math.huge
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local f1 = function()
    G[ tostring(nil) ] = job.num_tasks
    job.batch = job.begin_time
  end
  local _ = xpcall(f1, function(e) local function f(n) return 1 + f(n + 1) end return f(1) end)
  for k, v in pairs(job) do end
  local _ = [==[ ]] ]=] ]==]
  if G then
  else
  end
    return {unknown_field = 1}
  end
