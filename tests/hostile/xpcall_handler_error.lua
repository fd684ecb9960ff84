-- attack: an xpcall whose message handler raises again, and loops when it
-- cannot (error inside the handler of the budget error)
-- check: OK
-- test: budget
function classify(job)
  if job.comment ~= "" then
    local function handler(m)
      if type(m) == "string" and m:find("budget") then while true do end end
      error(m, 0)
    end
    for _ = 1, 10 do
      xpcall(function() while true do end end, handler)
    end
  end
  return nil
end
