-- attack: table.move of nils over almost the whole integer range (a C loop that allocates nothing)
-- check: OK
-- test: table_move.lua:6:
-- test: budget exceeded
function classify(job)
  if job.comment ~= "" then table.move({}, 1, math.maxinteger - 1, 1) end
  return nil
end
