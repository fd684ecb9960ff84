#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lanesctl rate: Lanes' rate rules for scripts (bench/fabric.sh reads its rates
# through it). Exact bits per second out, "bps" refused naming the rate, and
# bench/fabric.sh's helper follows it instead of rules of its own.
set -u
BUILDDIR=${LANES_BUILDDIR:-.}
SRCDIR=${LANES_SRCDIR:-.}
LANESCTL=$BUILDDIR/lanesctl/lanesctl
[ -x "$LANESCTL" ] || { echo "FAIL: $LANESCTL not built"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }

out=$(LANES_CONFIG=/nonexistent "$LANESCTL" rate 200mbit 1.5Gbit 34.359738368Gbit 40%) || fail "valid rates refused: $out"
[ "$out" = $'200000000\n1500000000\n34359738368\n40%' ] || fail "lanesctl rate printed: $out"
echo "ok: lanesctl rate prints exact bits per second (no config needed)"

out=$("$LANESCTL" rate 25Mbps 2>&1)
rc=$?
[ $rc = 1 ] || fail "25Mbps: exit $rc, expected 1: $out"
grep -q "rate '25Mbps'.*ambiguous.*25Mbit" <<<"$out" || fail "25Mbps: message does not name the rate and the fix: $out"
echo "ok: lanesctl rate refuses 25Mbps: $out"

# bench/fabric.sh takes its rates from lanesctl, not from its own regex.
# shellcheck source=bench/fabric.sh
source "$SRCDIR/bench/fabric.sh"
[ "$(FABRIC_LANESCTL=$LANESCTL fabric__tc_rate_bits 200mbit)" = 200000000 ] || fail "fabric: 200mbit"
FABRIC_LANESCTL=$LANESCTL fabric__tc_rate_bits 10mbps >/dev/null 2>&1 && fail "fabric accepted 10mbps"
FABRIC_LANESCTL=$LANESCTL fabric__tc_rate_bits 40% >/dev/null 2>&1 && fail "fabric accepted a percentage as a link rate"
echo "ok: bench/fabric.sh reads rates through lanesctl rate"
