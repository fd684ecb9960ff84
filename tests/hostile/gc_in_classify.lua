-- attack: the same finalizer, created only for jobs with a comment (passes the self-check)
-- check: OK
-- test: gc_in_classify.lua:6: setmetatable: __gc is not allowed
function classify(job)
  if job.comment ~= "" then
    setmetatable({}, {__gc = function() while true do end end})
  end
  return nil
end
