-- lanes-policy-fuzz: config=time-only seed=0x0
-- found: by hand: classify took ~300 ms of CPU with a 20 ms budget (a 4 MB copy per instruction, 1000 instructions between two hooks)
function classify(job)
  if job.name == 'lanes-fuzz-canary' then return 'inference' end
  local s = string.rep('a', 4000000)
  while true do local _ = s .. 'x' end
end
