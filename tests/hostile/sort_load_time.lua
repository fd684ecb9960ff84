-- attack: table.sort without a comparator (C, no Lua call for the hook to
-- see) over a large array built in C when the policy loads
-- check: OK
-- test: budget
local bytes = string.rep("\7\3\11\5\2\13\1\17\19\23\29\31", 20000)
local big = {string.byte(bytes, 1, #bytes)}
function classify(job)
  if job.comment ~= "" then
    for _ = 1, 50 do
      table.sort(big)
      table.sort(big, nil)
    end
  end
  return nil
end
