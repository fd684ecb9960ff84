#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lanesctl policy test with hostile strings: a job whose name and comment hold
# ESC sequences, NUL and C1 controls, and a policy that answers with an escape
# sequence as its class, and with ESC, NUL and invalid UTF-8 in its reason,
# user messages, reject text and log lines. Asserted on every output form:
# human (stdout and stderr) has no raw control byte and only valid UTF-8, and
# shows the escaped form (\x1B); --json is valid, strictly UTF-8 JSON with no
# raw control character.
set -u
BUILDDIR=${LANES_BUILDDIR:-.}
SRCDIR=${LANES_SRCDIR:-.}
LANESCTL=$BUILDDIR/lanesctl/lanesctl
[ -x "$LANESCTL" ] || { echo "FAIL: $LANESCTL not built"; exit 1; }
command -v python3 >/dev/null || { echo "FAIL: python3 not found"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
TMP=$(mktemp -d /tmp/lc$$-strings.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export TZ=UTC

sed -e 's|^script = .*|script = "hostile.lua"\non_error = "reject"|' "$SRCDIR/tests/lanesctl/data/good.toml" >"$TMP/lanes.toml"
cat >>"$TMP/lanes.toml" <<'TOML'
[classes.visible]
rank = 2
TOML
cat >"$TMP/hostile.lua" <<'LUA'
-- Hostile strings in everything a policy can say.
local ESC, NUL, BAD = "\27", "\0", "\255\254"
function classify(job)
  if job.name:find("esc-class", 1, true) then
    return { class = ESC .. "[2J" .. BAD }
  end
  if job.name:find("reject", 1, true) then
    return { reject = "no" .. ESC .. "]0;pwned" .. "\7" .. BAD .. " for " .. job.name }
  end
  lanes.log("seen " .. job.name .. NUL .. BAD, "error")
  lanes.user_message("hello " .. ESC .. "[31m" .. NUL .. BAD .. "\194\155" .. "2J")
  return { class = "visible", reason = "named " .. job.name .. " " .. BAD }
end
LUA
"$LANESCTL" --config "$TMP/lanes.toml" check >/dev/null 2>&1 || fail "check: $("$LANESCTL" --config "$TMP/lanes.toml" check 2>&1)"

# A job name with ESC, NUL, a C1 CSI and a newline (JSON escapes in the file).
for kind in esc-class reject accept; do
  printf '{"name": "%s\\u001b[2J\\u0000x\\u009b1m\\nFAKE", "comment": "\\u001b]0;title\\u0007", "user": "bob", "batch": true}\n' \
    "$kind" >"$TMP/$kind.json"
done

# inert FILE WHAT: no C0 control but newline, no DEL, no C1, valid UTF-8.
inert() {
  python3 - "$1" <<'PY' || fail "$2: $(od -c "$1" | head -20)"
import sys
data = open(sys.argv[1], "rb").read()
text = data.decode("utf-8")  # strict: raises on invalid UTF-8
bad = [hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
assert not bad, bad
PY
}

for kind in esc-class reject accept; do
  "$LANESCTL" --config "$TMP/lanes.toml" policy test --at 2026-12-01T03:00:00Z "$TMP/$kind.json" \
    >"$TMP/$kind.out" 2>"$TMP/$kind.err"
  inert "$TMP/$kind.out" "$kind: human stdout has raw control bytes or invalid UTF-8"
  inert "$TMP/$kind.err" "$kind: stderr has raw control bytes or invalid UTF-8"
  grep -q "\\\\x1B\[2J\\\\x00x\\\\x9B1m\\\\x0AFAKE" "$TMP/$kind.out" || fail "$kind: job name not shown escaped: $(cat "$TMP/$kind.out")"
  grep -q "^FAKE" "$TMP/$kind.out" && fail "$kind: the job name forged a line: $(cat "$TMP/$kind.out")"

  "$LANESCTL" --config "$TMP/lanes.toml" policy test --json --at 2026-12-01T03:00:00Z "$TMP/$kind.json" \
    >"$TMP/$kind.jsonout" 2>"$TMP/$kind.jsonerr"
  inert "$TMP/$kind.jsonout" "$kind: --json has raw control bytes or invalid UTF-8"
  python3 - "$TMP/$kind.jsonout" "$kind" <<'PY' || fail "$kind: --json content: $(cat "$TMP/$kind.jsonout")"
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
r = d["results"][0]
assert "\\x1B[2J\\x00x\\x9B1m\\x0AFAKE" in r["job"], r["job"]  # the summary, escaped
dec = r["decision"]
kind = sys.argv[2]
if kind == "esc-class":
    assert dec["verdict"] == "reject", dec
    assert "unknown class '\\x1B[2J\\xFF\\xFE'" in dec["reason"], dec["reason"]
elif kind == "reject":
    assert dec["verdict"] == "reject", dec
    assert "no\\x1B]0;pwned\\x07\\xFF\\xFE for " in dec["reason"], dec["reason"]
else:
    assert dec["class"] == "visible", dec
    assert dec["messages"] == ["hello \\x1B[31m\\x00\\xFF\\xFE\\x9B2J"], dec["messages"]
    assert "\\xFF\\xFE" in dec["reason"], dec["reason"]
PY
done
grep -q "unknown class '\\\\x1B\[2J\\\\xFF\\\\xFE'" "$TMP/esc-class.out" || fail "esc-class: $(cat "$TMP/esc-class.out")"
grep -q 'hello \\x1B\[31m\\x00\\xFF\\xFE\\x9B2J' "$TMP/accept.out" || fail "accept: message: $(cat "$TMP/accept.out")"
grep -q 'seen .*\\x00\\xFF\\xFE' "$TMP/accept.err" || fail "accept: lanes.log line: $(cat "$TMP/accept.err")"

# The policy's errors at check time: the class it returns is quoted escaped.
cat >"$TMP/selfcheck.lua" <<'LUA'
function classify(job) return { class = "\27[2J\255" } end
LUA
sed -e 's|^script = .*|script = "selfcheck.lua"|' "$TMP/lanes.toml" >"$TMP/selfcheck.toml"
"$LANESCTL" --config "$TMP/selfcheck.toml" check >"$TMP/check.out" 2>"$TMP/check.err"
[ $? -ne 0 ] || fail "check accepted a policy returning an unknown class"
cat "$TMP/check.out" "$TMP/check.err" >"$TMP/check.all"
inert "$TMP/check.all" "check: raw control bytes or invalid UTF-8"
grep -q "unknown class '\\\\x1B\[2J\\\\xFF'" "$TMP/check.all" || fail "check: $(cat "$TMP/check.all")"
echo "PASS: lanesctl strings"
