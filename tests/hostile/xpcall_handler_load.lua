-- attack: the message handler loop at the top level: the policy never
-- finishes loading (lanesctl check hung; slurmctld never came up)
-- check: did not load the policy within
-- test: did not load the policy within
xpcall(function() while true do end end, function() while true do end end)
function classify(job)
  return nil
end
