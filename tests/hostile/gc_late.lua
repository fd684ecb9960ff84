-- attack: __gc added to a metatable after setmetatable (the object must never be finalized)
-- check: OK
-- test: class:       batch
function classify(job)
  local mt = {}
  local t = setmetatable({}, mt)
  mt.__gc = function() while true do end end
  mt.__mode = "k"
  t = nil
  local junk = {}
  for i = 1, 1000 do junk[i] = {i} end
  return nil
end
