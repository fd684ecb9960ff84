-- attack: an endless loop that tries to catch the budget abort with pcall
-- check: OK
-- test: budget exceeded
function classify(job)
  if job.comment ~= "" then
    while true do pcall(function() while true do end end) end
  end
  return nil
end
