-- attack: weak tables (ephemeron chains make a collection superlinear)
-- check: OK
-- test: weak_table.lua:5: setmetatable: __mode is not allowed
function classify(job)
  if job.comment ~= "" then setmetatable({}, {__mode = "k"}) end
  return nil
end
