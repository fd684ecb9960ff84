#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# (#12.1) nodes.gso_burst: on a NIC with a capped job (ceil below the link) the
# largest GSO/TSO packet is what the lowest ceil sends in gso_burst; it follows
# the lowest ceil as jobs come and go and is restored when the last capped job
# ends. A NIC with no capped job is never touched, and "off" never touches it.
# It follows the ceil in force: a signal's busy shift (set_ceils, what
# lanes-agent calls) shrinks it and the shift's end grows it back; converge puts
# the shifted value back after drift, recounting from the desired state.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"

gso() { $NA ip -d link show dev "$DEV" | tr ' ' '\n' | awk '$0 == "gso_max_size" { getline; print; exit }'; }
gso4() { $NA ip -d link show dev "$DEV" | tr ' ' '\n' | awk '$0 == "gso_ipv4_max_size" { getline; print; exit }'; }
orig=$(gso)
orig4=$(gso4)
[ -n "$orig" ] || fail "cannot read gso_max_size of $DEV"
echo "$DEV: gso_max_size $orig gso_ipv4_max_size ${orig4:-n/a}"
# A different starting value, to tell "restored" from "default".
$NA ip link set dev "$DEV" gso_max_size 60000 || fail "set gso_max_size"
orig=$(gso); orig4=$(gso4)

# No cap (ceil = the link): untouched, no bookkeeping.
tool apply 60 --rate 100Mbit --ceil 100% >/dev/null || fail "apply 60"
[ "$(gso)" = "$orig" ] || fail "an uncapped job changed gso_max_size to $(gso)"
[ -e "$STATE/gso_$DEV" ] && fail "an uncapped job left GSO bookkeeping"

# 100 Mbit/s x 250 us = 3125 bytes.
tool apply 61 --rate 50Mbit --ceil 100Mbit >/dev/null || fail "apply 61"
[ "$(gso)" = 3125 ] || fail "gso_max_size $(gso), expected 3125 for a 100Mbit ceil"
[ -z "$orig4" ] || [ "$(gso4)" = 3125 ] || fail "gso_ipv4_max_size $(gso4), expected 3125"
# A higher ceil does not raise it; the lowest wins.
tool apply 62 --rate 100Mbit --ceil 400Mbit >/dev/null || fail "apply 62"
[ "$(gso)" = 3125 ] || fail "gso_max_size $(gso) after a higher ceil joined"
tool remove 61 || fail "remove 61"
[ "$(gso)" = 12500 ] || fail "gso_max_size $(gso), expected 12500 (400Mbit x 250us) after the lowest left"
tool remove 62 || fail "remove 62"
[ "$(gso)" = "$orig" ] || fail "gso_max_size $(gso) not restored to $orig"
[ -z "$orig4" ] || [ "$(gso4)" = "$orig4" ] || fail "gso_ipv4_max_size $(gso4) not restored to $orig4"
[ -e "$STATE/gso_$DEV" ] && fail "GSO bookkeeping left after the last capped job"
echo "gso_max_size 3125 -> 12500 -> restored $orig"

# A busy shift (set_ceils): the bound follows the ceil in force, both ways.
tool apply 64 --rate 50Mbit --ceil 400Mbit >/dev/null || fail "apply 64"
[ "$(gso)" = 12500 ] || fail "gso_max_size $(gso), expected 12500 for a 400Mbit ceil"
tool set-ceil 64 "$DEV" 100Mbit busy >/dev/null || fail "set-ceil 64 100Mbit"
[ "$(gso)" = 3125 ] || fail "gso_max_size $(gso) at the busy ceil 100Mbit, expected 3125"
[ -z "$orig4" ] || [ "$(gso4)" = 3125 ] || fail "gso_ipv4_max_size $(gso4) at the busy ceil, expected 3125"
# Drift during the shift: converge puts the busy bound back, not the normal one.
$NA ip link set dev "$DEV" gso_max_size 60000 || fail "set gso_max_size by hand"
tool converge >/dev/null || fail "converge"
[ "$(gso)" = 3125 ] || fail "gso_max_size $(gso) after converge during the shift, expected 3125"
# The bookkeeping behind (a crash between the desired state and the gso file):
# converge recounts from the desired state.
o=$(sed -n 's/^orig //p' "$STATE/gso_$DEV")
printf 'orig %s\nset 12500\nceil 400000000 1\n' "$o" >"$STATE/gso_$DEV"
$NA ip link set dev "$DEV" gso_max_size 12500 || fail "set gso_max_size by hand"
tool converge >/dev/null || fail "converge"
[ "$(gso)" = 3125 ] || fail "gso_max_size $(gso) after converge with a stale count, expected 3125"
tool set-ceil 64 "$DEV" 400Mbit >/dev/null || fail "set-ceil 64 400Mbit"
[ "$(gso)" = 12500 ] || fail "gso_max_size $(gso) after the shift ended, expected 12500"
# Uncapped normally, capped while busy: counted only while the shift lasts.
tool apply 65 --rate 50Mbit --ceil 100% >/dev/null || fail "apply 65"
tool set-ceil 65 "$DEV" 200Mbit busy >/dev/null || fail "set-ceil 65 200Mbit"
[ "$(gso)" = 6250 ] || fail "gso_max_size $(gso) with job 65 at a busy 200Mbit, expected 6250"
tool set-ceil 65 "$DEV" 10Gbit >/dev/null || fail "set-ceil 65 10Gbit"
[ "$(gso)" = 12500 ] || fail "gso_max_size $(gso) after job 65's shift ended, expected 12500"
tool remove 64 || fail "remove 64"
[ "$(gso)" = "$orig" ] || fail "gso_max_size $(gso) not restored to $orig after the shifts"
[ -e "$STATE/gso_$DEV" ] && fail "GSO bookkeeping left after the shifts"
tool remove 65 || fail "remove 65"
echo "busy shift: gso_max_size 12500 -> 3125 (held across drift) -> 12500; uncapped job 6250 while busy"

# "off": never touched.
$NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" --gso-burst off \
  apply 63 --rate 50Mbit --ceil 100Mbit >/dev/null || fail "apply 63"
[ "$(gso)" = "$orig" ] || fail "gso_burst off changed gso_max_size to $(gso)"
tool remove 63 || fail "remove 63"
tool remove 60 || fail "remove 60"
tool remove-all || fail "remove-all"
echo "PASS"
