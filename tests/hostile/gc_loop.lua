-- attack: a finalizer that never returns, set at load time (finalizers run with hooks off)
-- check: gc_loop.lua:4: setmetatable: __gc is not allowed
-- test: gc_loop.lua:4: setmetatable: __gc is not allowed
setmetatable({}, {__gc = function() while true do end end})
function classify(job) return nil end
