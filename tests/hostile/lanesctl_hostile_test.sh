#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The hostile-policy corpus through lanesctl: each tests/hostile/*.lua is
# loaded by `lanesctl check` and run by `lanesctl policy test` on a job whose
# comment is 1000 user-chosen characters. Each must return (a hang is caught
# by a generous timeout) and say what its header promises (`-- check:` and
# `-- test:` lines: "OK" or text the output must contain, file:line included;
# `-- policy:` lines add keys to its [policy] table).
# Elapsed times are printed as ratios to a benign policy, never asserted.
set -u
BUILDDIR=${LANES_BUILDDIR:-.}
SRCDIR=${LANES_SRCDIR:-.}
LANESCTL=$BUILDDIR/lanesctl/lanesctl
H=$(cd "$SRCDIR/tests/hostile" && pwd -P)
[ -x "$LANESCTL" ] || { echo "FAIL: $LANESCTL not built"; exit 1; }
TMP=$(mktemp -d /tmp/lc$$-hostile.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
LIMIT=60   # seconds; only a hang gets near it
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ms() { date +%s%N | cut -c1-13; }

# run NAME ARGS...: output in $out, exit code in $rc, milliseconds in $took
run() {
  local t0; t0=$(ms)
  timeout "$LIMIT" "$LANESCTL" "$@" >"$TMP/out" 2>&1
  rc=$?
  took=$(( $(ms) - t0 ))
  out=$(cat "$TMP/out")
}

config_for() {  # policy file -> config path; its `-- policy: key = value` lines join [policy]
  local extra
  extra=$(sed -n 's/^-- policy: //p' "$1")
  sed "s|@POLICY@|$1|" "$H/lanes.toml.in" >"$TMP/lanes.toml"
  if [ -n "$extra" ]; then
    printf '%s\n' "$extra" >"$TMP/extra"
    sed -i "/^\[policy\]\$/r $TMP/extra" "$TMP/lanes.toml"
  fi
  echo "$TMP/lanes.toml"
}

# The benign baseline.
printf 'function classify(job)\n  if job.comment ~= "" then return nil end\n  return nil\nend\n' >"$TMP/benign.lua"
cfg=$(config_for "$TMP/benign.lua")
run --config "$cfg" policy test --at "2026-12-01 09:00" "$H/job.json"
[ $rc -eq 0 ] || fail "benign policy: exit $rc: $out"
base=$took
[ "$base" -gt 0 ] || base=1

n=0
for policy in "$H"/*.lua; do
  name=$(basename "$policy")
  n=$((n + 1))
  cfg=$(config_for "$policy")
  run --config "$cfg" check
  check_ms=$took
  [ $rc -ne 124 ] && [ $rc -ne 137 ] || { fail "$name: lanesctl check did not return within ${LIMIT}s"; continue; }
  while IFS= read -r want; do
    if [ "$want" = OK ]; then
      [ $rc -eq 0 ] && echo "$out" | grep -q ": OK:" || fail "$name: check should pass: exit $rc: $out"
    else
      [ $rc -ne 0 ] || fail "$name: check should fail: $out"
      echo "$out" | grep -qF -- "$want" || fail "$name: check output lacks '$want': $out"
    fi
  done < <(sed -n 's/^-- check: //p' "$policy")

  run --config "$cfg" policy test --at "2026-12-01 09:00" "$H/job.json"
  test_ms=$took
  [ $rc -ne 124 ] && [ $rc -ne 137 ] || { fail "$name: lanesctl policy test did not return within ${LIMIT}s"; continue; }
  while IFS= read -r want; do
    echo "$out" | grep -qF -- "$want" || fail "$name: policy test output lacks '$want': $out"
  done < <(sed -n 's/^-- test: //p' "$policy")
  printf 'figure: %-26s check %5d ms, policy test %5d ms (%s x the benign policy)\n' "$name" "$check_ms" "$test_ms" \
    "$(awk -v a="$test_ms" -v b="$base" 'BEGIN { printf "%.1f", a / b }')"
done
[ $n -ge 15 ] || fail "only $n hostile policies found in $H"
if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "PASS: $n hostile policies answered and explained by lanesctl"
