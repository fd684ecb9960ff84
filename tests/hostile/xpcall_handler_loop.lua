-- attack: an xpcall whose message handler loops forever; Lua runs the handler
-- of the budget error while the hook that raised it is still running, so the
-- hook never sees the loop (only the policy worker's deadline stops it)
-- check: OK
-- test: budget
function classify(job)
  if job.comment ~= "" then
    xpcall(function() while true do end end, function() while true do end end)
  end
  return nil
end
