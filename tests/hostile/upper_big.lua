-- attack: linear C calls on the largest string the heap allows, in a loop
-- check: OK
-- test: upper_big.lua:8:
-- test: budget exceeded
function classify(job)
  if job.comment ~= "" then
    local s = "a" for i = 1, 21 do s = s .. s end  -- 2 MiB
    while true do local u = s:upper() end
  end
  return nil
end
