#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lanesctl check: exit codes and file:line:col messages on good and broken
# configurations and policies; usage errors name the option.
set -u
BUILDDIR=${LANES_BUILDDIR:-.}
SRCDIR=${LANES_SRCDIR:-.}
LANESCTL=$BUILDDIR/lanesctl/lanesctl
D=$(cd "$SRCDIR/tests/lanesctl/data" && pwd -P)  # canonical: lanesctl prints normalised paths
[ -x "$LANESCTL" ] || { echo "FAIL: $LANESCTL not built"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
TMP=$(mktemp -d /tmp/lc$$-check.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

run() {  # run ARGS...: sets rc, out (stdout), err (stderr)
  "$LANESCTL" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  out=$(cat "$TMP/out")
  err=$(cat "$TMP/err")
}

run check --config "$D/good.toml"
[ $rc -eq 0 ] || fail "good config: exit $rc: $err"
[ "$out" = "$D/good.toml: OK: 3 classes (batch, inference, training), default batch, 2 windows, policy $D/good.lua" ] \
  || fail "good config output: $out"
[ -z "$err" ] || fail "good config stderr: $err"

# LANES_CONFIG is the default when --config is absent.
LANES_CONFIG=$D/good.toml run check
[ $rc -eq 0 ] || fail "LANES_CONFIG: exit $rc: $err"

run check --config "$D/broken_key.toml"
[ $rc -eq 1 ] || fail "broken key: exit $rc"
echo "$err" | grep -qxF "$D/broken_key.toml:36:1: classes.training.rat: unknown key (did you mean \"rate\"?)" \
  || fail "broken key message: $err"
[ -z "$out" ] || fail "broken key stdout: $out"

run check --config "$D/broken_policy.toml"
[ $rc -eq 1 ] || fail "broken policy: exit $rc"
echo "$err" | grep -q "^$D/broken.lua:4: 'then' expected" || fail "broken policy message: $err"

run check --config "$D/missing.toml"
[ $rc -eq 1 ] || fail "missing config: exit $rc"
echo "$err" | grep -q "^$D/missing.toml: " || fail "missing config message: $err"

run --json check --config "$D/broken_key.toml"
[ $rc -eq 1 ] || fail "--json broken key: exit $rc"
echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['ok'] is False
e = d['errors'][0]
assert (e['line'], e['column']) == (36, 1) and e['file'].endswith('broken_key.toml'), e
assert e['key'] == 'classes.training.rat' and e['message'].startswith('unknown key'), e
assert e['text'].endswith('broken_key.toml:36:1: classes.training.rat: ' + e['message']), e
" || fail "--json broken key: $out"
run check --config "$D/good.toml" --json
echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['ok'] is True and d['classes'] == ['batch', 'inference', 'training'] and d['windows'] == ['night', 'peak'], d
" || fail "--json good: $out"

# Usage errors: exit 2, naming the option.
run check --confg x
[ $rc -eq 2 ] || fail "misspelt option: exit $rc"
echo "$err" | grep -q "unknown option '--confg' for 'check'" || fail "misspelt option message: $err"
run check --config
[ $rc -eq 2 ] && echo "$err" | grep -q "option '--config' needs a value" || fail "missing value: $rc $err"
run frobnicate
[ $rc -eq 2 ] && echo "$err" | grep -q "unknown subcommand 'frobnicate'" || fail "unknown subcommand: $rc $err"
run --version
[ $rc -eq 0 ] && echo "$out" | grep -q "^lanes [0-9]" || fail "--version: $rc $out"
run --help
[ $rc -eq 0 ] && echo "$out" | grep -q "^usage: lanesctl" || fail "--help: $rc $out"
echo "PASS: lanesctl check"
