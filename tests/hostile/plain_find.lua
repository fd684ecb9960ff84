-- attack: plain find of a long needle in a long haystack (stock Lua searches naively, O(n*m): 2 s a call)
-- check: OK
-- test: plain_find.lua:9:
-- test: budget exceeded
function classify(job)
  if job.comment ~= "" then
    local hay = "a" for i = 1, 20 do hay = hay .. hay end  -- 1 MiB
    local needle = hay:sub(1, 100000) .. "b"
    for i = 1, 100 do hay:find(needle, 1, true) end
  end
  return nil
end
