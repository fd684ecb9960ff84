-- attack: an endless loop at the top level
-- check: infinite_loop.lua:5:
-- check: budget exceeded
-- test: infinite_loop.lua:5:
while true do end
function classify(job) return nil end
