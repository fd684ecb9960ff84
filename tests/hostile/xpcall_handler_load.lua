-- attack: the message handler loop at the top level: the policy never
-- finishes loading (lanesctl check hung; slurmctld never came up); now the
-- sandbox stops it, and the worker's load deadline would
-- check: budget
-- test: budget
xpcall(function() while true do end end, function() while true do end end)
function classify(job)
  return nil
end
