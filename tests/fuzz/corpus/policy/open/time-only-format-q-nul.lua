-- lanes-policy-fuzz: config=time-only seed=0x0
-- found: by hand: one string.format('%q') over 3 MB of NUL bytes is one C call of ~100 ms (20 ms budget)
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local z = string.rep('\0', 3000000)
  for i = 1, 10 do local _ = string.format('%q', z) end
  return 'batch'
end
