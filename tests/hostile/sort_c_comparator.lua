-- attack: table.sort with a comparator that loops (Lua) on a large table
-- check: OK
-- test: budget exceeded
function classify(job)
  if job.comment ~= "" then
    local t = {}
    for i = 1, 100000 do t[i] = (i * 7919) % 100003 end
    table.sort(t, function(a, b) for k = 1, 100 do end return a < b end)
  end
  return nil
end
