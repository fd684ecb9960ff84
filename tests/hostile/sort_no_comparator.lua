-- attack: table.sort without a comparator over an array built at load (the library's sort runs in C, no hook)
-- check: OK
-- test: sort_no_comparator.lua:8: instruction budget exceeded
local A = {}
for i = 1, 100000 do A[i] = (i * 7919) % 100003 end
function classify(job)
  if job.comment ~= "" then
    for i = 1, 50 do table.sort(A) end
  end
  return nil
end
