#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lanesctl windows: the calendar across both DST changes of 2026 in Berlin, with an
# exception, and the reservation commands (shell-safe, in the window's zone).
set -u
BUILDDIR=${LANES_BUILDDIR:-.}
SRCDIR=${LANES_SRCDIR:-.}
LANESCTL=$BUILDDIR/lanesctl/lanesctl
D=$(cd "$SRCDIR/tests/lanesctl/data" && pwd -P)  # canonical: lanesctl prints normalised paths
[ -x "$LANESCTL" ] || { echo "FAIL: $LANESCTL not built"; exit 1; }
[ -e /usr/share/zoneinfo/Europe/Berlin ] || { echo "FAIL: tzdata (Europe/Berlin) missing"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
export TZ=UTC
ctl() { "$LANESCTL" --config "$D/good.toml" "$@"; }
same() {  # same NAME ACTUAL EXPECTED
  [ "$2" = "$3" ] || fail "$1:
$2
--- expected:
$3"
}

# Spring forward: Sun 2026-03-29 02:00 CET -> 03:00 CEST.
out=$(ctl windows --from "2026-03-27 00:00" --days 5) || fail "windows (March)"
same "March calendar" "$out" "Windows from 2026-03-27 00:00 UTC to 2026-04-01 00:00 UTC

night (Europe/Berlin): sat 22:00-06:00
  Sat 2026-03-28 22:00 CET -> Sun 2026-03-29 06:00 CEST           7h  (DST change)

peak (Europe/Berlin): mon,tue,wed,thu,fri 08:00-20:00; avoided by training
  Fri 2026-03-27 08:00 CET -> Fri 2026-03-27 20:00 CET            12h
  Mon 2026-03-30 08:00 CEST -> Mon 2026-03-30 20:00 CEST          12h
  Tue 2026-03-31 08:00 CEST -> Tue 2026-03-31 20:00 CEST          12h"

# Fall back (Sun 2026-10-25 03:00 CEST -> 02:00 CET), --from in the window's zone.
out=$(ctl windows --from "2026-10-23 00:00 Europe/Berlin" --days 4 --window night) || fail "windows (October)"
same "October calendar" "$out" "Windows from 2026-10-22 22:00 UTC to 2026-10-26 22:00 UTC

night (Europe/Berlin): sat 22:00-06:00
  Sat 2026-10-24 22:00 CEST -> Sun 2026-10-25 06:00 CET           9h  (DST change)"

# Exceptions: Christmas has no peak.
out=$(ctl windows --from "2026-12-23 00:00 Europe/Berlin" --days 7 --window peak) || fail "windows (December)"
echo "$out" | grep -q "^  exception 2026-12-24..2026-12-26 (no occurrence)$" || fail "exception line: $out"
echo "$out" | grep -q "Thu 2026-12-24" && fail "peak on Christmas Eve: $out"
[ "$(echo "$out" | grep -c ' -> ')" -eq 3 ] || fail "December occurrences (23, 28, 29 expected): $out"

out=$(ctl windows --json --from "2026-03-28 00:00" --days 2 --window night) || fail "windows --json"
echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['from'] == '2026-03-28T00:00:00Z' and d['to'] == '2026-03-30T00:00:00Z', d
w = d['windows'][0]
assert (w['name'], w['zone'], w['days'], w['start'], w['end']) == ('night', 'Europe/Berlin', 'sat', '22:00', '06:00'), w
o = w['occurrences'][0]
assert o['begin'] == '2026-03-28T22:00:00+01:00' and o['end'] == '2026-03-29T06:00:00+02:00', o
assert o['minutes'] == 420 and o['begin_abbrev'] == 'CET' and o['end_abbrev'] == 'CEST', o
assert 'reservations' not in d
" || fail "windows --json: $out"

# Reservations on the partition training borrows, across the October change.
out=$(ctl windows --from "2026-10-23 00:00 Europe/Berlin" --days 4 --reservations --reservation-accounts serving) \
  || fail "reservations"
same "reservations" "$out" "# Lanes reservations from 2026-10-22T22:00:00Z to 2026-10-26T22:00:00Z
# Flags: IGNORE_JOBS (running jobs stay), MAGNETIC (allowed jobs use it without --reservation)
# StartTime is wall-clock time in the window's zone (TZ=), Duration is in minutes.
# peak: Fri 2026-10-23 08:00 CEST .. Fri 2026-10-23 20:00 CEST
TZ=Europe/Berlin scontrol create reservation ReservationName=lanes_peak_20261023_0800 StartTime=2026-10-23T08:00:00 Duration=720 PartitionName=infer Nodes=ALL Flags=IGNORE_JOBS,MAGNETIC,PART_NODES Accounts=serving
# peak: Mon 2026-10-26 08:00 CET .. Mon 2026-10-26 20:00 CET
TZ=Europe/Berlin scontrol create reservation ReservationName=lanes_peak_20261026_0800 StartTime=2026-10-26T08:00:00 Duration=720 PartitionName=infer Nodes=ALL Flags=IGNORE_JOBS,MAGNETIC,PART_NODES Accounts=serving"
# The script parses as shell (nodes with brackets are quoted).
out=$(ctl windows --from "2026-12-23 00:00" --days 1 --reservations 'inf[1-4]' --reservation-users alice) || fail "reservations on nodes"
echo "$out" | grep -q " Nodes='inf\[1-4\]' Flags=IGNORE_JOBS,MAGNETIC Users=alice$" || fail "nodes reservation: $out"
bash -n <(echo "$out") || fail "reservation script does not parse: $out"

# Errors.
ctl windows --window offpeak >/dev/null 2>"${TMPDIR:-/tmp}/lc$$.err"
rc=$?; err=$(cat "${TMPDIR:-/tmp}/lc$$.err"); rm -f "${TMPDIR:-/tmp}/lc$$.err"
[ $rc -eq 2 ] && echo "$err" | grep -q "window 'offpeak' is not defined" || fail "unknown window: $rc $err"
ctl windows --reservations >/dev/null 2>&1
[ $? -eq 2 ] || fail "--reservations without accounts/users must be a usage error"
echo "PASS: lanesctl windows"
