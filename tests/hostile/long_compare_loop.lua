-- attack: a loop of `<` over two 512 KiB strings of NUL bytes: each
-- comparison is one VM instruction, and Lua compares such strings one
-- NUL-ended piece at a time (a strcoll and a strlen per byte), 2-4 ms; the
-- count hook looks every 1000 instructions, about a second apart; only the
-- policy worker's deadline stops it in time
-- check: OK
-- test: budget
local a = string.rep("\0", 512 * 1024)
local b = a .. "y"
function classify(job)
  if job.comment ~= "" then
    local n = 0
    while true do if a < b then n = n + 1 end end
  end
  return nil
end
