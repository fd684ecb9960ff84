-- lanes-policy-fuzz: config=default seed=0x93087349cf056b67
-- found: hang: killed after 20 s, in the call after compile
local G = {}
pcall(function() return lanes.next_end((function(a1, b) return a1 < b end)) end)
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  pcall(function() return string.sub({class = '\xff\xfe', reason = ''}, {'serve-x', job.begin_time, k = job.lanes_cap}, {1, 2, 3, 'x', nil, 5}) end)
  pcall(function() return rawequal(string.rep('ab', 3817), string.rep('ab', 2497)) end)
  pcall(function()
    local f2 = function()
      do local g3 = 0 ::L1:: g3 = g3 + 1 if g3 < 10229 then goto L1 end end
      pcall(function()
        for k, v in pairs(job.env) do local _ = k .. '=' .. v end
        local _ = #job
        pcall(function() return string.packsize((('gpu' ^ false) or job)) end)
      end)
      error((not job.gpus))
    end
    local _ = xpcall(f2, function(e) return xpcall(error, function() while true do end end) end)
    repeat local x = 1 until false
    local function r4(n) return r4(n + 1) + 1 end
    pcall(r4, 297936)
    local _ = r4(11)
  end)
  pcall(string.match, job.partition, '.*.*.*.*x')
  for i, v in ipairs(job) do if i > 100 then break end end
  pcall(function() return lanes.next_start('peak') end)
    return ~0
  end
