-- attack: a to-be-closed variable whose __close never returns
-- check: OK
-- test: budget exceeded
function classify(job)
  if job.comment ~= "" then
    local x <close> = setmetatable({}, {__close = function() while true do end end})
  end
  return nil
end
