-- attack: a table that grows until memory runs out, caught with pcall
-- check: OK
-- test: memory_bomb.lua:
function classify(job)
  if job.comment ~= "" then
    pcall(function() local t = {} while true do t[#t + 1] = {} end end)
  end
  return nil
end
