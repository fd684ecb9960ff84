#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every string is escaped for its sink, on a real cluster: a policy that
# answers with an escape sequence as its class, and puts ESC, NUL and invalid
# UTF-8 into its reject text, user messages and log lines, meets jobs whose
# name, comment and environment hold the same. Asserted: the user's sbatch
# output and slurmctld.log show the escaped form (\x1B, \x00, \xFF) and hold
# no raw ESC byte, no other control byte in a lanes: line, and no invalid
# UTF-8; `lanesctl policy test --job` on the real job (job_info_t through the
# shared translator) prints the job's name escaped.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
E2E_MODE=offpeak e2e_start_cluster
user=$(cluster_test_user)
ctl_log=$(cluster_log slurmctld)
policy=$CLUSTER_CONF_DIR/policy.lua

write_policy() {
    cat >"$policy.new" <<'LUA'
-- Hostile strings in everything a policy can say.
local ESC, NUL, BAD = "\27", "\0", "\255\254"
function classify(job)
  if job.name:find("esc-class", 1, true) then
    return { class = ESC .. "[2J" .. BAD }
  end
  if job.name:find("esc-reject", 1, true) then
    return { reject = "no" .. ESC .. "]0;pwned\7" .. BAD .. " for " .. job.name .. " / " .. job.comment }
  end
  if job.name:find("esc-accept", 1, true) then
    local x = job.env and job.env.LANES_TEST_X or "-"
    lanes.log("seen " .. job.name .. " / " .. job.comment .. NUL .. BAD .. " env " .. x, "error")
    lanes.user_message("hello " .. ESC .. "[31m" .. NUL .. BAD .. "\194\155" .. "2J " .. job.name)
    return { class = "inference", reason = "named " .. job.name }
  end
  return nil
end
LUA
    mv "$policy.new" "$policy"
}
e2e_check "the hostile-strings policy is loaded" e2e_reload write_policy
grep -q "lanes: reload failed" "$ctl_log" && e2e_fail "reload failed: $(grep 'lanes: reload' "$ctl_log" | tail -3)"

# sbatch as the test user; prints stderr+stdout.
submit() { cluster_run_as "$user" sbatch --parsable -o /dev/null "$@" 2>&1; }
# inert TEXT-FILE: no raw control byte but newline, no C1, valid UTF-8.
inert() {
    python3 - "$1" <<'PY'
import sys
text = open(sys.argv[1], "rb").read().decode("utf-8")  # strict: invalid UTF-8 raises
bad = [hex(ord(c)) for c in text if (ord(c) < 0x20 and c not in "\n") or 0x7f <= ord(c) <= 0x9f]
sys.exit(1 if bad else 0)
PY
}
out=$(mktemp)
trap 'rm -f "$out"; e2e_on_exit' EXIT

# 1. The policy returns an escape sequence as its class: refused (not a class),
#    and quoted escaped to the user and in the log.
submit -J $'esc-class\e[2J' --wrap true >"$out"
e2e_check "a class with an escape sequence is refused, quoted escaped ($(cat -v "$out"))" \
    grep -qF "unknown class '\\x1B[2J\\xFF\\xFE'" "$out"
e2e_check "the user saw no raw control byte or invalid UTF-8 (class)" inert "$out"
e2e_check "slurmctld.log quotes the class escaped" \
    e2e_wait_until 10 grep -qF "unknown class '\\x1B[2J\\xFF\\xFE'" "$ctl_log"

# 2. A rejection quoting the policy's hostile text, the job's name and comment.
submit -J $'esc-reject\e[2J' --comment=$'\e]0;title\a\xff' --wrap true >"$out"
e2e_check "the reject text reaches the user escaped ($(cat -v "$out"))" \
    grep -qF 'no\x1B]0;pwned\x07\xFF\xFE for esc-reject\x1B[2J / \x1B]0;title\x07\xFF' "$out"
e2e_check "the user saw no raw control byte or invalid UTF-8 (reject)" inert "$out"
e2e_check "slurmctld.log names the rejected job escaped" \
    e2e_wait_until 10 grep -qF 'JobName=esc-reject\x1B[2J UserId=' "$ctl_log"

# 3. An accepted job: the policy's user message and log line, with the job's
#    name, comment and batch environment in them.
submit -J $'esc-accept\e[2J' --comment=$'c\xc2\x9b1m' --export=$'LANES_TEST_X=\e[5m\xff' --wrap true >"$out"
id=$(grep -E '^[0-9]+' "$out" | tail -1 | cut -d';' -f1)
e2e_check "the job is accepted ($(cat -v "$out"))" test -n "$id"
e2e_check "the user message reaches the user escaped" \
    grep -qF 'hello \x1B[31m\x00\xFF\xFE\x9B2J esc-accept\x1B[2J' "$out"
e2e_check "the user saw no raw control byte or invalid UTF-8 (accept)" inert "$out"
e2e_check "lanes.log reaches slurmctld.log escaped" \
    e2e_wait_until 10 grep -qF 'seen esc-accept\x1B[2J / c\x9B1m\x00\xFF\xFE env \x1B[5m\xFF' "$ctl_log"
e2e_check "the job is routed by the policy" test "$(cluster_job_field "$id" Partition)" = inference

# 4. The whole slurmctld.log: no raw ESC byte anywhere; every lanes: line inert.
e2e_check "no raw ESC byte in slurmctld.log" bash -c "! grep -q \$'\\e' '$ctl_log'"
lanes_lines=$(mktemp)
grep -a 'lanes: ' "$ctl_log" >"$lanes_lines"
e2e_check "every lanes: line of slurmctld.log is free of control bytes and valid UTF-8" inert "$lanes_lines"
rm -f "$lanes_lines"

# 5. lanesctl policy test --job on the real job: job_info_t through the one
#    translator; the name it prints is escaped.
dry=$(cluster_run_ctl "$E2E_LANESCTL" policy test --config "$CLUSTER_CONF_DIR/lanes.toml" --job "$id" 2>&1)
printf '%s\n' "$dry" >"$out"
e2e_check "lanesctl policy test --job prints the job escaped ($(cat -v "$out"))" \
    grep -qF "job 'esc-accept\\x1B[2J'" "$out"
e2e_check "lanesctl policy test --job prints no raw control byte" inert "$out"
e2e_check "lanesctl policy test --job classifies it as slurmctld did" grep -qE '^  class: +inference' "$out"

e2e_finish
