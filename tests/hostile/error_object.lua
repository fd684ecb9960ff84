-- attack: an error object whose __tostring never returns
-- check: OK
-- test: error object is a table value
function classify(job)
  if job.comment ~= "" then
    error(setmetatable({}, {__tostring = function() while true do end end}))
  end
  return nil
end
