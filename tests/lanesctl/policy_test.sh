#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lanesctl policy test: the shipped golden fixtures pass, a wrong expectation
# fails naming the field, job files are classified at --at, bad input is refused.
set -u
BUILDDIR=${LANES_BUILDDIR:-.}
SRCDIR=${LANES_SRCDIR:-.}
LANESCTL=$BUILDDIR/lanesctl/lanesctl
D=$(cd "$SRCDIR/tests/lanesctl/data" && pwd -P)  # canonical: lanesctl prints normalised paths
GOLDEN=$SRCDIR/tests/golden/default
[ -x "$LANESCTL" ] || { echo "FAIL: $LANESCTL not built"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
TMP=$(mktemp -d /tmp/lc$$-policy.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export TZ=Europe/Berlin   # the machine zone for times without one
run() {
  "$LANESCTL" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  out=$(cat "$TMP/out")
  err=$(cat "$TMP/err")
}

# The project's golden fixtures (default.lua) pass through lanesctl too.
n=$(ls "$GOLDEN"/*.json | wc -l)
run --config "$GOLDEN/lanes.toml" policy test --fixtures "$GOLDEN"
[ $rc -eq 0 ] || fail "golden fixtures: exit $rc: $out $err"
echo "$out" | tail -1 | grep -qx "$n passed, 0 failed" || fail "golden summary: $out"
[ "$(echo "$out" | grep -c '^PASS ')" -eq "$n" ] || fail "golden PASS lines: $out"

# A wrong expectation: FAIL with the field, exit 1.
mkdir "$TMP/fx"
cp "$GOLDEN/01_training_peak_deferred.json" "$GOLDEN/08_inference_at_peak.json" "$TMP/fx/"
python3 - "$TMP/fx/01_training_peak_deferred.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["expect"]["class"] = "inference"
json.dump(d, open(sys.argv[1], "w"))
PY
run --config "$GOLDEN/lanes.toml" policy test --fixtures "$TMP/fx"
[ $rc -eq 1 ] || fail "wrong expectation: exit $rc"
echo "$out" | grep -q "^FAIL $TMP/fx/01_training_peak_deferred.json" || fail "FAIL line: $out"
echo "$out" | grep -q '^  class: want "inference", got "training"' || fail "diff line: $out"
echo "$out" | grep -q "^PASS $TMP/fx/08_inference_at_peak.json" || fail "PASS line: $out"
echo "$out" | tail -1 | grep -qx "1 passed, 1 failed" || fail "summary: $out"
run --config "$GOLDEN/lanes.toml" policy test --fixtures "$TMP/fx" --json
[ $rc -eq 1 ] || fail "wrong expectation --json: exit $rc"
echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert (d['passed'], d['failed']) == (1, 1), d
bad = d['results'][0]
assert not bad['ok'] and bad['checked'] and bad['diffs'][0].startswith('class:'), bad
assert bad['decision']['class'] == 'training', bad
" || fail "--json fixtures: $out"

# A job file at peak (machine zone) and on a holiday (explicit zone).
cat >"$TMP/train.json" <<'JSON'
{"name": "train-llm", "user": "bob", "account": "ml", "partition": "train",
 "batch": true, "gpus": 8, "time_limit": "2:00:00"}
JSON
run --config "$D/good.toml" policy test --at "2026-12-01 09:00" "$TMP/train.json"
[ $rc -eq 0 ] || fail "job file: exit $rc: $err"
expected="$TMP/train.json: job 'train-llm' of bob (account ml, partition train, gpus 8)
  at:          Tue 2026-12-01 09:00 CET
  verdict:     accept
  class:       training
  partition:   train
  qos:         training
  features:    (unchanged)
  nice:        (unchanged)
  begin time:  Tue 2026-12-01 20:00 CET
  time limit:  (unchanged)
  rate/ceil:   10Gbit / 25Gbit
  dscp:        CS1 (8)
  rdma:        tc 32, sl 1
  messages:    lanes: training job deferred to Tue 20:00 CET (peak window)
  why:         class training: policy good.lua:7 (8+ GPUs in batch); deferred past window 'peak'"
[ "$out" = "$expected" ] || fail "job file output:
$out
--- expected:
$expected"
run --config "$D/good.toml" policy test --json --at "2026-12-24T09:00:00+01:00" "$TMP/train.json"
echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
r = d['results'][0]
assert r['at'] == '2026-12-24T09:00:00+01:00', r
assert r['decision']['class'] == 'training' and r['decision']['begin_time'] is None, r
assert r['decision']['network']['dscp'] == 8, r
" || fail "holiday --json: $out"
run --config "$D/good.toml" policy test --at "2026-12-01 09:00 America/New_York" "$TMP/train.json"
echo "$out" | grep -q "^  at:          Tue 2026-12-01 15:00 CET" || fail "--at with a zone: $out"

# Refusals.
echo '{"name": "x", "gpu": 8}' >"$TMP/typo.json"
run --config "$D/good.toml" policy test "$TMP/typo.json"
[ $rc -eq 1 ] && echo "$out" | grep -q "error: .*gpu" || fail "unknown job key: $rc $out"
run --config "$D/good.toml" policy test --at "next tuesday" "$TMP/train.json"
[ $rc -eq 2 ] && echo "$err" | grep -q "^lanesctl: --at: 'next tuesday' is not a time" || fail "bad --at: $rc $err"
run --config "$D/broken_policy.toml" policy test "$TMP/train.json"
[ $rc -eq 3 ] && echo "$err" | grep -q "broken.lua:4:" || fail "broken policy: $rc $err"
echo "PASS: lanesctl policy test"
