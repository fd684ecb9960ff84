-- attack: an xpcall message handler that loops; Lua runs it where the budget error is raised, inside the hook, hooks off
-- check: OK
-- test: xpcall_handler_loop.lua:
-- test: budget exceeded
function classify(job)
  if job.comment ~= "" then
    xpcall(function() while true do end end, function(e) while true do end end)
  end
  return nil
end
