-- attack: compiling a huge generated chunk (the parser runs in C)
-- check: OK
-- test: load_bomb.lua:8:
-- test: budget exceeded
function classify(job)
  if job.comment ~= "" then
    local chunk = "x = 1 " for i = 1, 19 do chunk = chunk .. chunk end  -- 3 MiB
    local f = load(chunk)
  end
  return nil
end
