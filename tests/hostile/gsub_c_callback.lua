-- attack: 100 x gsub(".", string.lower) on a 2 MiB string: a C callback per match runs no VM instruction
-- check: OK
-- test: gsub_c_callback.lua:8:
-- test: budget exceeded
function classify(job)
  if job.comment ~= "" then
    local s = "A" for i = 1, 21 do s = s .. s end  -- 2 MiB
    for i = 1, 100 do s:gsub(".", string.lower) end
  end
  return nil
end
